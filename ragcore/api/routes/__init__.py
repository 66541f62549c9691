"""One router per concern; `ragcore.api.app.create_app` mounts them."""
