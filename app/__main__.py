from app.cli import console

console()
