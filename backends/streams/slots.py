"""Connections being opened to one server, counted across every job on the event loop.

A server limits the connections it has not yet greeted or authenticated, not the jobs that open them: sshd's
MaxStartups starts dropping unauthenticated connections past ten, and vsftpd queues only 32 connections (past
that, with SYN cookies on, a connection is open on the client's side only and its greeting never comes). Jobs
side by side to one server (the GUI runs three) therefore share one gate per server and protocol.
"""

from __future__ import annotations

import asyncio
import weakref

_SLOTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def server_slots(protocol: str, host: str, port: int, size: int) -> asyncio.Semaphore:
    """The gate for opening ``protocol`` connections to ``host:port`` on this event loop (``size`` slots, as the
    first caller asked)."""
    per_loop = _SLOTS.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault((protocol, host, port), asyncio.Semaphore(max(1, size)))
