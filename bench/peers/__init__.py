"""``make bench-peers`` (``python -m bench.peers``): the node against what a merchant would
write instead of it, on the same machine, with the same load generator and the same load.

The peers, each written as the providers' documentation and common tutorials show, in its
usual production setting with one worker (their source is here; their packages are installed
apart from the project's, ``env``):

1. ``fastapi_postgres.py``: FastAPI on uvicorn, stripe-python's ``construct_event``, psycopg 3's
   pool on PostgreSQL;
2. ``fastapi_sqlite.py``: the same app on SQLite (WAL, ``synchronous=FULL``), a connection a
   request;
3. ``express_app.js``: Express, stripe-node's ``constructEvent`` on ``express.raw``, and
   node-postgres's ``Pool``, with the same SQL.

Each has the node's two routes: ``POST /webhook/stripe/{project}`` (verify, store the event once,
mark its order paid when amount and currency match, durable before the 200) and
``GET /status/{project}/{tx}`` (a bearer key checked in constant time, the order read by its
key). They serve the node's own shop (``bench.shop``): its project id, key, webhook secret and
transaction ids, so one pool of requests (``workload``) goes to all four servers.

As in ``make bench``, every server runs on CPU 0 and ``wrk`` on CPU 1; PostgreSQL is on CPU 0
too (the database shares the app's core), and its CPU is counted both in a peer's cost and
apart. A peer and the node are measured in turn on the same pool, and each ratio is taken pair
by pair (``measure``); every run is checked: no answer but 2xx, and the events stored are the
distinct event ids acknowledged.
"""
