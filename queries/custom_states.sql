-- custom_state_values --
-- A custom shape's state (core/profiles/custom.py): rows whose state column holds one of the values the configuration gives it.
{state}::text = ANY(%(values)s::text[])

-- custom_state_lease_ran_out --
-- A custom shape's stuck rows: in progress (one of its in-progress values) with their lease run out.
{state}::text = ANY(%(values)s::text[]) AND {lease} < now()

-- custom_state_in_progress_since --
-- A custom shape's stuck rows: in progress (one of its in-progress values) since longer ago than its stuck_after (seconds, %(stale)s), by its time column.
{state}::text = ANY(%(values)s::text[]) AND {time} < now() - make_interval(secs => %(stale)s)

-- custom_state_done_before --
-- A custom shape's purgeable rows: done (one of its done values) longer ago than the retention, by its done_time column.
{state}::text = ANY(%(values)s::text[]) AND {done_time} < now() - %(retention)s

-- custom_state_done_before_epoch_ms --
-- A custom shape's purgeable rows when its times are epoch milliseconds: done longer ago than the retention.
{state}::text = ANY(%(values)s::text[]) AND {done_time} < %(before_epoch_ms)s
