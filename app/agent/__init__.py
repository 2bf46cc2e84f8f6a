"""Ferry on a DTN: ``labferry agent`` runs the engine headless under the user's own account and takes requests
over a Unix socket that only that user may open (mode 0600 in a 0700 folder). A desktop reaches it through the
site's own SSH connection (``ssh HOST labferry agent --stdio`` bridges to the socket): no new port, no new
password, the same host-key checks and keys as the site profile. Requests are resolved on the agent by the same
front door (``app.requests``) as local ones, against the agent's own sites and settings.
"""
