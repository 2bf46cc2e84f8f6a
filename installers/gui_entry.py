"""The bundle's windowed program: ``Ferry`` (``Ferry.exe`` on Windows, the executable inside ``Ferry.app`` on
macOS) opens the window with no console beside it; items given (a .torrent, a magnet: link, an address) are
opened in it."""

from app.cli.desktop import gui_console

if __name__ == "__main__":
    gui_console()
