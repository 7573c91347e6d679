-- count_profile_state --
-- How many rows of a library's table are in one of its states: {condition} is the state's block of profile_states.sql.
SELECT count(*) FROM {table} WHERE {condition}

-- estimate_profile_state --
-- The planner's estimate of a state's rows, for a count too slow to take (the rollup job past its budget for one state): the plan of the rows the count reads, whose top node estimates them all, parallel or not.
EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE {condition}

-- list_profile_state --
-- Rows of a library's table in one of its states, oldest first by the state's time column ({order_value}: the one the library indexes for it, else the table's first; its identity where it has none), then by identity ({identity_value}: a JSON array of the identity columns, as text); keyset-paginated after (after_order, after_identity), rows without that time last. Each row whole as JSON but for the columns in %(omit)s (payloads).
SELECT to_jsonb(t) - %(omit)s::text[] AS row_json, ({order_value})::text AS order_value,
       ({identity_value})::text AS identity_value
FROM {table} t
WHERE ({condition})
  AND (%(first)s
       OR (%(after_null)s AND ({order_value}) IS NULL AND ({identity_value})::text > %(after_identity)s)
       OR (NOT %(after_null)s AND (({order_value}) > %(after_order)s
                                   OR (({order_value}) = %(after_order)s
                                       AND ({identity_value})::text > %(after_identity)s)
                                   OR ({order_value}) IS NULL)))
ORDER BY ({order_value}) NULLS LAST, ({identity_value})::text
LIMIT %(limit)s

-- get_profile_row --
-- One row of a library's table by its identity: its identity columns ({identity_columns}) equal to the values of the identity's JSON array ({identity_values}, each cast to its column's type), through the table's key; whole as JSON.
SELECT to_jsonb(t) AS row_json FROM {table} t WHERE ({identity_columns}) = ({identity_values})

-- profile_identity --
-- A library row's identity as one value: a JSON array of the profile's identity columns ({identity_columns}), the same in a list and in a row's URL.
jsonb_build_array({identity_columns})

-- profile_row_in_state --
-- Whether the row of a library's table with this identity ({identity_columns} equal to {identity_values}) is in one of its states ({condition}): what a row's page says of it.
SELECT EXISTS (SELECT 1 FROM {table} t WHERE ({condition}) AND ({identity_columns}) = ({identity_values}))

-- list_profile_backlog --
-- A library table's backlog: its rows not in the library's done state ({condition}: that state's block), by the table's group columns ({group_columns}), each group with its rows and how long its oldest row has waited ({lag}: seconds since the least of {time}, the table's first time column), the longest waiting first; at most %(limit)s groups.
SELECT jsonb_build_array({group_columns}) AS group_values, count(*) AS rows, {lag} AS lag_seconds
FROM {table}
WHERE NOT COALESCE(({condition}), false)
GROUP BY {group_columns}
ORDER BY min({time}) NULLS LAST, count(*) DESC
LIMIT %(limit)s

-- profile_lag_timestamptz --
-- Seconds since the least of a timestamptz column ({time}) in the group.
EXTRACT(epoch FROM now() - min({time}))::float8

-- profile_lag_utc --
-- Seconds since the least of a timestamp column the library writes from a UTC clock ({time}).
EXTRACT(epoch FROM (now() AT TIME ZONE 'UTC') - min({time}))::float8

-- profile_lag_local --
-- Seconds since the least of a timestamp column the library writes from its host's wall clock ({time}), that clock's zone in %(library_zone)s (LIBRARY_TIMEZONE).
EXTRACT(epoch FROM (now() AT TIME ZONE %(library_zone)s) - min({time}))::float8

-- profile_lag_epoch_ms --
-- Seconds since the least of an epoch-milliseconds column ({time}).
(EXTRACT(epoch FROM now()) * 1000 - min({time}))::float8 / 1000

-- profile_row_fact --
-- What a row's page says of the row of a library's table with this identity ({identity_columns} equal to {identity_values}) beyond its columns: a fact's expression over it ({fact}, a block of profile_facts.sql), NULL for nothing to say.
SELECT ({fact})::text FROM {table} t WHERE ({identity_columns}) = ({identity_values})

-- get_profile_state_lag --
-- How long the oldest row in one of a library table's states ({condition}: that state's block) has waited: seconds since the least of its time column ({lag} over {time}, in its unit); null when no row is in it or none has the time.
SELECT {lag} AS lag_seconds FROM {table} WHERE {condition}
