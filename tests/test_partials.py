"""The partials written on every row (dashboard/partials.py) write exactly what the macros they replace wrote."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

pytestmark = pytest.mark.system  # see docs/development.md, Tests

# templates/_macros.html's macros before they became Python functions, word for word
MACROS = """
{% macro key_link(scope, key) -%}
<a class="key mono" href="{{ key_url(scope, key) }}" title="{{ key }}">{{ key }}</a>
{%- endmacro %}
{% macro time(moment) -%}
{% if moment %}<time datetime="{{ moment.isoformat() }}" data-rel title="{{ moment | utc }}">{{ moment | ago }}</time>\
{% else %}<span class="muted">-</span>{% endif %}
{%- endmacro %}
{% macro stamp(moment) -%}
{% if moment %}<time datetime="{{ moment.isoformat() }}" data-abs title="{{ moment | ago }}">{{ moment | utc }}</time>\
{% else %}<span class="muted">-</span>{% endif %}
{%- endmacro %}
{% macro clock(moment) -%}
<time datetime="{{ moment.isoformat() }}" data-abs="time">{{ moment | utc('%H:%M:%S') }}</time>
{%- endmacro %}
{% macro short(moment) -%}
<time datetime="{{ moment.isoformat() }}" data-abs="short">{{ moment | utc('%b %d %H:%M') }}</time>
{%- endmacro %}
""".replace("\\\n", "")


def test_the_partials_write_what_the_macros_wrote(make_app, shared_database_url):
    app = make_app(shared_database_url)
    now = datetime.now(timezone.utc)
    moments = [now - timedelta(seconds=75), now + timedelta(hours=3), datetime(2026, 1, 2, 3, 4, 5, 6, timezone.utc)]
    moments.append(datetime(2026, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=-5))))
    with app.test_request_context("/keys?status=stuck", base_url="http://localhost/mounted here"):
        macros = app.jinja_env.from_string(MACROS).module
        partials = app.jinja_env.get_template("_macros.html").module
        for name in ("time", "stamp", "clock", "short"):
            for moment in moments:
                assert str(getattr(partials, name)(moment)) == str(getattr(macros, name)(moment)), (name, moment)
        for name in ("time", "stamp"):
            for nothing in (None, app.jinja_env.undefined()):
                assert str(getattr(partials, name)(nothing)) == str(getattr(macros, name)(nothing))
        for scope, key in (("orders", "k-1"), ("a b", "x/y<z>&\"'"), ("..", "k"), ("s", "a/../b"), ("ü;@", "100%")):
            assert str(partials.key_link(scope, key)) == str(macros.key_link(scope, key))


def test_a_utc_time_is_strftimes_text():
    from idemdash.core.formatting import utc

    zones = [timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    for zone in zones:
        for moment in (
            datetime(2026, 11, 28, 9, 12, 1, 123456, zone),
            datetime(2026, 1, 1, 0, 0, 0, tzinfo=zone),
            datetime(1000, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
            datetime(9999, 12, 30, 23, 59, 59, 999999, zone),
        ):
            expected = moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + " UTC"
            assert utc(moment) == expected, moment
            assert utc(moment, "%H:%M") == moment.astimezone(timezone.utc).strftime("%H:%M") + " UTC"
    naive = datetime(2026, 11, 28, 9, 12, 1)  # read as local time, as astimezone reads it
    assert utc(naive) == naive.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + " UTC"


# the list under the overview's charts, as templates/overview.html's loop wrote it before it became Python
EVENT_LOOP = """{% for e in events %}<li data-event="{{ e.kind }}"><span class="mark-key {{ e.kind }}" \
aria-hidden="true"></span>
      {{ time(e.at) }} {% if e.kind == 'purge' and has_endpoint('purges.page') %}<a href="\
{{ url_for('purges.page') }}">{{ e.what }}</a>{% elif e.audit_id and has_endpoint('audit.page') %}<a href="\
{{ url_for('audit.page', actor=e.by) }}">{{ e.what }}</a>{% else %}{{ e.what }}{% endif %}</li>{% endfor %}""".replace(
    "\\\n", ""
)


def test_the_event_list_is_what_the_templates_loop_wrote(make_app, shared_database_url):
    from idemdash.dashboard.trend_marks import Event, list_items

    app = make_app(shared_database_url)
    now = datetime.now(timezone.utc)
    events = [
        Event("purge", now - timedelta(minutes=3), "scheduler", "purge of keys: 1,200 rows deleted", None, 7),
        Event("action", now - timedelta(minutes=2), "alice <ops>", "alice <ops> reclassified a & b", 12, None),
        Event("action", now - timedelta(minutes=1), "bob", 'bob: "note"', None, None),
    ]
    with app.test_request_context("/", base_url="http://localhost/mounted here"):
        time_partial = app.jinja_env.get_template("_macros.html").module.time
        loop = app.jinja_env.from_string("{% set time = t %}" + EVENT_LOOP)
        expected = loop.render(events=events, t=time_partial)
        assert str(list_items(events)) == expected
        assert "actor=alice+%3Cops%3E" in expected and "&lt;ops&gt; reclassified a &amp; b" in expected
