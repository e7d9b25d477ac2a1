"""Transformer Explorer's web service: parse the request, call model/, serialize the answer."""
