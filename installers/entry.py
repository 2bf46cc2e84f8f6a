"""The bundle's one program: ``labferry`` (the CLI; ``labferry gui`` opens the window)."""

from app.cli import console

if __name__ == "__main__":
    console()
