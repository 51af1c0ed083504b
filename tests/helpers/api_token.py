"""The API token unit tests give their in-process controller (controller.api_auth): the CLI
reads it from MRCLAB_API_TOKEN, which `use_token` sets."""
TOKEN = "unit-test-token-0123456789abcdef"


def use_token(monkeypatch) -> str:
    monkeypatch.setenv("MRCLAB_API_TOKEN", TOKEN)
    return TOKEN
