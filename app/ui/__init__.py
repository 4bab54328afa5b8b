"""The view: state rendered to HTML, and page intents turned into commands.

``markdown`` (safe, streamed), ``render`` (HTML for every DOM hook), ``view`` (patching the
page), ``coalesce`` (one render per frame), ``controller`` (intents → commands).
"""
