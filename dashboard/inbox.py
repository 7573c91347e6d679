"""/inbox and its JSON twin."""
from __future__ import annotations

from flask import Blueprint

bp = Blueprint("inbox", __name__)
