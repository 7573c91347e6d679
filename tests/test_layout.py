"""Layout that reads at 3 a.m.: the header names the database on one line, however long its socket path."""

from __future__ import annotations

from bs4 import BeautifulSoup


def test_a_socket_path_is_shortened_in_the_header_and_given_in_full_on_hover(client, database_url):
    label = BeautifulSoup(client.get("/keys").data, "html.parser").select_one(".topbar .dbname")
    text = label.get_text()
    # the tests' server listens on a socket in a temporary directory: its last part, the port and the database
    assert text.startswith("socket …/") and "/idemdash_test" in text and text.count("/") == 2
    assert "socket directory /" in label["title"]
