"""The optimizer's steps, below both of their users: the one train loop (`optimization.loop`).

training/ trains the shipped models through it and lab/ its experiments that train (norm
placement); neither may import the other, so the loop they share sits under both (-> model).
"""
