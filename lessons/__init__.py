"""The lessons: the chapter path, what each chapter asks the class to see, and how that is measured and worded.

Above lab/ and analysis/ (it may import model, analysis, checkpoints and lab; app and static_site import it):

    chapters.py      the lesson path (chapters.json): per chapter and language a model, a sentence, a layer, a
                     head and its claims as data, checked against the table of claim kinds when it loads
    claims.py        KINDS, the one table of claim kinds, and measured(): a chapter's claims on its view
    trace_claims.py  the kinds read off the trace on screen (attention rows, the lens, shapes, RoPE, ...)
    lab_claims.py    the kinds that call a lab experiment (lab/<name>.py), so the bar and the panel agree
    view.py          View (the traced pass on screen and where the class looks), Claim, ClaimError
    wording.py       a measured claim's line, worded from static/text/<lang>.json
    languages.py     LANGS, the one list of the languages the pages and the chapters are written in

analysis/ keeps the pure read-offs (analysis/words.py: where a word is among the tokens), lab/ the experiments;
what a lesson asks of them lives here. app/answers/lesson_claims.py only turns a traced run into a View and the
measured claims into an answer.

Questions (predict, then reveal; issue 42) live beside the claims and read the same numbers:

    questions.py          QUESTION_KINDS, the one table of question kinds; asked() words a chapter's questions on
                          a view; verdict() checks an answer against an asked question (no model, no state)
    question_kinds.py     the kinds: each a function of a View returning its right answer as a fact (a token
                          position, a block or "never", a choice, a number with its tolerance), or a QuestionError
                          where the view gives it no well-defined answer
    chapter_questions.py  a chapter's questions by id: questions_for(), question_for(), check()

a chapter names its questions as data in chapters.json beside its claims (ids the same in every language).
"""
