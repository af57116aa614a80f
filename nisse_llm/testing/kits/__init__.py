"""The testing kit's routes: one module per route, holding its reply and error bodies,
the events that stream them, and its `RouteKit` (named by the route's descriptor)."""
