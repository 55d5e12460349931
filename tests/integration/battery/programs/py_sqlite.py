"""py_sqlite.py: Python's sqlite3 module, in rollback-journal and WAL mode with mmap: 10 000 rows
inserted in one transaction, an update, queries, a checkpoint, the integrity check."""
import sqlite3

for mode in ("delete", "wal"):
    con = sqlite3.connect("py_%s.db" % mode)
    print(con.execute("PRAGMA journal_mode=%s" % mode).fetchone())
    con.execute("PRAGMA mmap_size=67108864")
    con.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)")
    with con:
        con.executemany("INSERT INTO t(b) VALUES (?)", (("row %d" % i,) for i in range(10000)))
    print(con.execute("SELECT count(*), sum(a), max(b) FROM t").fetchone())
    with con:
        con.execute("UPDATE t SET b = upper(b) WHERE a % 5 = 0")
    print(con.execute("SELECT b FROM t WHERE a = 25").fetchone())
    if mode == "wal":
        print(con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
    print(con.execute("PRAGMA integrity_check").fetchone())
    con.close()
