"""`sfcheck survey`: SFrame across a whole package repository, kept in a results database.

repo.py lists a repository's packages (Debian index, RPM repodata, plain directories);
work.py checks one package (in a worker process or on a Dask worker); db.py holds the
results (SQLite, keyed by package digest, sfcheck version and rule set); run.py drives a
survey; queries.py and data.py read the database back (commands, the report's data).
"""
