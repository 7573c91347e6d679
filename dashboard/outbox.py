"""/outbox and its JSON twin."""
from __future__ import annotations

from flask import Blueprint

bp = Blueprint("outbox", __name__)
