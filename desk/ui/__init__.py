"""`desk ui`: the local review page, a third thin rendering of the public API beside the CLI and
`desk serve` (desk.ui.app). Needs the `ui` extra: pip install 'desk[ui]'."""

UI_MISSING_HINT = "install the UI extra: pip install 'desk[ui]' (Starlette, Jinja2, uvicorn)"
