"""What each explorer endpoint answers, read from a cached trace.

Each endpoint is a record (`Endpoint`, app/pipeline.py) at the end of its module here, listed in app/endpoints.py;
its `plan(context, request)` checks the request against the model (a bad layer or stage name costs no forward
pass) and returns the `Build` that turns the `Run` (the text's recorded forward pass: `run.trace()`) into the JSON
body in the engine's pool. Tensor math lives in `analysis.readouts`; these modules only pick, slice and serialize.
The checks they share with the lab (stack, layer, heads, the work budget) are in app/request_checks.py.
"""
