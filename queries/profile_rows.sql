-- count_profile_state --
-- How many rows of a library's table are in one of its states: {condition} is the state's block of profile_states.sql.
SELECT count(*) FROM {table} WHERE {condition}

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

-- profile_row_fact --
-- What a row's page says of the row of a library's table with this identity ({identity_columns} equal to {identity_values}) beyond its columns: a fact's expression over it ({fact}, a block of profile_facts.sql), NULL for nothing to say.
SELECT ({fact})::text FROM {table} t WHERE ({identity_columns}) = ({identity_values})
