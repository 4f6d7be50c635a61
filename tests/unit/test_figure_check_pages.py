"""The figure harness's page helpers (no browser needed)."""

import pytest

from tests.figures.figure_check import by_heading, only_sections

PAGE = (
    "<html><head><style>x</style></head><body><main><h1>r</h1>"
    '<section id="a"><h2>A</h2><svg>1</svg></section>'
    '<section id="b"><h2>B</h2><h3>one</h3><svg>2</svg><h3>two</h3><p>no figure</p>'
    "<h3>three</h3><svg>3</svg></section></main></body></html>"
)


def test_only_sections_keeps_the_head_and_the_named_sections():
    page = only_sections(PAGE, ["b"])
    assert page.startswith("<html><head><style>x</style>") and "<h1>r</h1>" in page
    assert '<section id="b">' in page and '<section id="a">' not in page
    with pytest.raises(ValueError, match="no <section id='c'>"):
        only_sections(PAGE, ["c"])


def test_by_heading_gives_one_page_per_part_with_figures():
    parts = by_heading(only_sections(PAGE, ["b"]))
    assert len(parts) == 2  # "two" has no figure
    assert "<svg>2</svg>" in parts[0] and "<svg>3</svg>" in parts[1]
    assert all(p.startswith("<html><head><style>x</style>") for p in parts)
