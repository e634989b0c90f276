"""Errors about the user's input (data files, corpora) that train.py reports as one line, without a traceback."""


class InputError(ValueError):
    pass
