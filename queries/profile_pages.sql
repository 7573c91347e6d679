-- get_profile_pending_split --
-- A library table's rows in one of its states ({condition}: its block of profile_states.sql) split by attempts: how many have %(min_attempts)s or more ({attempts}: likely poison, counted apart), how long the oldest of the others has waited ({healthy_age}: the lag every page shows) and the oldest likely poison row ({poison_age}), each in its time column's unit.
SELECT count(*) FILTER (WHERE {attempts} >= %(min_attempts)s) AS poison,
       {healthy_age} AS lag_seconds, {poison_age} AS poison_oldest_seconds
FROM {table} WHERE {condition}

-- count_profile_state_since --
-- How many rows of a library's table in one of its states ({condition}) have their time column ({time}) within the last %(hours)s hours ({since}: that moment in the column's unit): done in 24 h.
SELECT count(*) FROM {table} WHERE ({condition}) AND {time} >= {since}

-- profile_since_timestamptz --
-- The moment %(hours)s hours ago, for a timestamptz column.
now() - make_interval(hours => %(hours)s)

-- profile_since_utc --
-- The moment %(hours)s hours ago, for a timestamp column the library writes from a UTC clock.
(now() AT TIME ZONE 'UTC') - make_interval(hours => %(hours)s)

-- profile_since_local --
-- The moment %(hours)s hours ago, for a timestamp column the library writes from its host's clock in %(library_zone)s.
(now() AT TIME ZONE %(library_zone)s) - make_interval(hours => %(hours)s)

-- profile_since_epoch_ms --
-- The moment %(hours)s hours ago, for an epoch-milliseconds column.
(EXTRACT(epoch FROM now() - make_interval(hours => %(hours)s)) * 1000)::bigint

-- profile_age_timestamptz --
-- Seconds since a timestamptz value ({at}: an aggregate over the rows).
EXTRACT(epoch FROM now() - ({at}))::float8

-- profile_age_utc --
-- Seconds since a timestamp value the library writes from a UTC clock ({at}).
EXTRACT(epoch FROM (now() AT TIME ZONE 'UTC') - ({at}))::float8

-- profile_age_local --
-- Seconds since a timestamp value the library writes from its host's clock ({at}), in %(library_zone)s.
EXTRACT(epoch FROM (now() AT TIME ZONE %(library_zone)s) - ({at}))::float8

-- profile_age_epoch_ms --
-- Seconds since an epoch-milliseconds value ({at}).
(EXTRACT(epoch FROM now()) * 1000 - ({at}))::float8 / 1000

-- profile_oldest_healthy --
-- The oldest time ({time}) of the rows with fewer than %(min_attempts)s attempts ({attempts}).
min({time}) FILTER (WHERE {attempts} IS NULL OR {attempts} < %(min_attempts)s)

-- profile_oldest_poison --
-- The oldest time ({time}) of the rows with %(min_attempts)s attempts or more ({attempts}).
min({time}) FILTER (WHERE {attempts} >= %(min_attempts)s)

-- profile_oldest --
-- The oldest time ({time}) of the rows.
min({time})

-- profile_newest --
-- The newest time ({time}) of the rows.
max({time})

-- list_profile_groups --
-- A library table's rows by its group columns ({group_columns}): each group's rows, how long ago its oldest and newest rows came ({oldest_age}, {newest_age}: over its first time column), most recent first; at most %(limit)s groups, and a group filter (name contains, any case: {group_filter}).
SELECT jsonb_build_array({group_columns}) AS group_values, count(*) AS rows,
       {oldest_age} AS oldest_seconds, {newest_age} AS newest_seconds
FROM {table}
WHERE {group_filter}
GROUP BY {group_columns}
ORDER BY {newest_age} NULLS LAST, count(*) DESC
LIMIT %(limit)s

-- list_profile_filtered_rows --
-- Rows of a library's table in one of its states ({condition}), as list_profile_state lists them (oldest first by {order_value}, then {identity_value}; keyset after (after_order, after_identity), payloads in %(omit)s left out), narrowed by a group ({group_filter}) and a least number of attempts ({attempts_filter}).
SELECT to_jsonb(t) - %(omit)s::text[] AS row_json, ({order_value})::text AS order_value,
       ({identity_value})::text AS identity_value
FROM {table} t
WHERE ({condition}) AND {group_filter} AND {attempts_filter}
  AND (%(first)s
       OR (%(after_null)s AND ({order_value}) IS NULL AND ({identity_value})::text > %(after_identity)s)
       OR (NOT %(after_null)s AND (({order_value}) > %(after_order)s
                                   OR (({order_value}) = %(after_order)s
                                       AND ({identity_value})::text > %(after_identity)s)
                                   OR ({order_value}) IS NULL)))
ORDER BY ({order_value}) NULLS LAST, ({identity_value})::text
LIMIT %(limit)s

-- profile_group_is --
-- A row's first group column ({group_column}) is the group asked for, as text.
({group_column})::text = %(group)s

-- profile_group_contains --
-- One of a row's group columns ({group_columns}: CAP's event Name and consumer Group) contains the text asked for, any case.
EXISTS (SELECT 1 FROM jsonb_array_elements_text(jsonb_build_array({group_columns})) AS g(value)
        WHERE strpos(lower(g.value), lower(%(group)s)) > 0)

-- profile_min_attempts --
-- A row was tried %(min_attempts)s times or more ({attempts}).
{attempts} >= %(min_attempts)s

-- profile_any_row --
-- No narrowing.
true

-- list_profile_table_columns --
-- The columns a table has now ({table} given as its qualified name, %(table)s): a profile's optional column (Spring Modulith v1 has no completion_attempts) is read only where it is there.
SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%(table)s) AND attnum > 0 AND NOT attisdropped
