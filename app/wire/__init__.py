"""The wire: what travels between server and page, and nothing else.

``sse`` decodes the event stream (WHATWG), ``protocol`` validates its events, ``api`` holds the
endpoint payloads, ``errors`` the error tree. The reference server imports this package too.
"""
