"""A class session with no accounts (issue 42): classes, their students and answers in a real database.

models.py (the tables), database.py (the engine: SQLite in a data folder by default, PostgreSQL when
TE_DATABASE_URL names one; migrations/ run by Alembic), rules.py (codes, keys, nicknames, answers: what a
client may send), service.py (every action of a class, one transaction each), live.py (what a live stream
waits on: a class's version row, polled), group_writer.py and answer_group.py (a burst of answers committed in
groups), rate_limit.py (attempts per client, in the database). No web here: app/ parses, calls
`Classroom` once and responds; nothing of the project below it is imported (the questions' check is handed in).
"""
