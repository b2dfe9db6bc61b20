"""Project actors: each project's transactions, quota counters and rate buckets are owned by one
task that handles that project's messages one at a time."""
