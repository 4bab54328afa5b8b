"""The HTTP shell around the routes: sign-in and sessions (``auth``, ``passwords``,
``throttle``, ``peers``), the Host allowlist (``hosts``), read deadlines (``deadlines``),
storage failures answered (``storage``), security headers and CORS (``security``), the page's
files (``static``) and the objects every route shares (``services``)."""
