"""How the kit's scripted upstream speaks each route, by route: each route's `RouteKit`
lives in its own module (`nisse_llm.testing.kits`), gathered here under the names the
package's route descriptors once named."""

from __future__ import annotations

from nisse_llm.testing.kits.anthropic_messages import ANTHROPIC_MESSAGES_KIT
from nisse_llm.testing.kits.base import ReplyBody, RouteKit
from nisse_llm.testing.kits.openai_chat import OPENAI_CHAT_KIT
from nisse_llm.testing.kits.openai_responses import OPENAI_RESPONSES_KIT

__all__ = [
    "ANTHROPIC_MESSAGES_KIT",
    "OPENAI_CHAT_KIT",
    "OPENAI_RESPONSES_KIT",
    "ReplyBody",
    "RouteKit",
]
