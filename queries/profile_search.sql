-- list_leading_index_columns --
-- The columns an index of a table (%(regclass)s) starts with: a search compares those, and only those, to pasted text.
SELECT DISTINCT a.attname::text AS name, format_type(a.atttypid, NULL) AS data_type
FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid = %(regclass)s::regclass AND i.indisvalid

-- find_profile_rows_exact --
-- The rows of a library's table whose column {column} (one its index starts with) is the pasted text, cast to the column's type; by identity ({identity_value}), at most %(limit)s.
SELECT ({identity_value})::text AS identity FROM {table} t WHERE {column} = %(q)s
ORDER BY 1 LIMIT %(limit)s

-- find_profile_rows_prefix --
-- The rows of a library's table whose text column {column} (one its index starts with) starts with the pasted text: the index walked from the text for at most %(examine)s entries, at most %(limit)s of them.
SELECT s.identity FROM (
    SELECT ({identity_value})::text AS identity, {column}::text AS value FROM {table} t
    WHERE {column} >= %(q)s ORDER BY {column} LIMIT %(examine)s
) s
WHERE starts_with(s.value, %(q)s)
LIMIT %(limit)s

-- find_profile_owner --
-- Whether a row of a library's table has the pasted text as its owner ({owner}, compared as text).
SELECT EXISTS (SELECT 1 FROM {table} t WHERE ({owner})::text = %(q)s) AS found
