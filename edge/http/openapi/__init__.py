"""The node's OpenAPI 3.1 document (CONTRACT 4.9), written in Python beside the routes it
describes, so a route and its description change in one commit and one test compares them."""
