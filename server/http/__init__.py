"""The HTTP shell around the routes: sign-in and sessions (``auth``), security headers and CORS
(``security``), the page's files (``static``) and the objects every route shares
(``services``)."""
