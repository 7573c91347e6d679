-- get_primary_wal_lsn --
-- Where the primary's write-ahead log ends now (the standby has replayed everything once it reaches this).
SELECT pg_current_wal_lsn()::text AS lsn

-- get_standby_replay --
-- A hot standby's replay position against the primary's: bytes still to replay, seconds since it last replayed a transaction, paused or not.
SELECT pg_is_in_recovery() AS in_recovery,
       CASE WHEN pg_is_in_recovery()
            THEN greatest(pg_wal_lsn_diff(%(primary_lsn)s::pg_lsn, pg_last_wal_replay_lsn()), 0)::double precision
       END AS bytes_behind,
       extract(epoch FROM now() - pg_last_xact_replay_timestamp())::double precision AS seconds_since_replay,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END AS paused

-- list_logical_slots --
-- This database's logical replication slots (what reads rows from the write-ahead log, as Debezium's connector
-- does): how far each has confirmed reading behind where the log ends now (on a standby: where it has replayed to),
-- and how much log it keeps the server from recycling.
SELECT slot_name, plugin, active, (confirmed_flush_lsn IS NULL) AS never_confirmed,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       confirmed_flush_lsn)::double precision AS bytes_behind,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       restart_lsn)::double precision AS bytes_retained
FROM pg_catalog.pg_replication_slots
WHERE slot_type = 'logical' AND database = current_database()
ORDER BY slot_name
