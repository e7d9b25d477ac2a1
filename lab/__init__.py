"""The lab's experiments: the claims the textbook makes about attention, measured.

One module per experiment, pure functions over a model and a text, each reading like the claim it checks.
The web layer (app/lab/<same name>.py) only checks the request, picks and serializes what these return.
"""
