"""The exchange with the proxy: clients, routers, limits, TLS, classification, headroom."""
