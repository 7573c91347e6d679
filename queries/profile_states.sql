-- state_reference_keys_in_progress --
-- idemdash reference schema: keys rows that are in progress
{status} = 'processing'

-- state_reference_keys_stuck --
-- idemdash reference schema: keys rows that are stuck (a key without a lease end is stuck once claimed longer ago than the lease (IDEMDASH_LEASE_SECONDS))
{status} = 'processing'
AND ({locked_until} < now() OR ({locked_until} IS NULL AND {claimed_at} < now() - %(stale_after)s))

-- state_reference_keys_done --
-- idemdash reference schema: keys rows that are done
{status} = 'succeeded'

-- state_reference_keys_failed --
-- idemdash reference schema: keys rows that are failed (failed_retryable may be claimed again; failed_final is final)
{status} IN ('failed_retryable', 'failed_final')

-- state_reference_keys_purgeable --
-- idemdash reference schema: keys rows that are purgeable (terminal and expired; a purge also keeps a key an operator decided on within the replay horizon, which this count includes)
{status} IN ('succeeded', 'failed_final') AND {expires_at} < now()

-- state_reference_inbox_done --
-- idemdash reference schema: inbox rows that are done (a row is a message consumed once)
true

-- state_reference_inbox_purgeable --
-- idemdash reference schema: inbox rows that are purgeable
{processed_at} < now() - %(retention)s

-- state_reference_outbox_pending --
-- idemdash reference schema: outbox rows that are pending
{status} = 'pending'

-- state_reference_outbox_done --
-- idemdash reference schema: outbox rows that are done
{status} = 'published'

-- state_reference_outbox_failed --
-- idemdash reference schema: outbox rows that are failed (set aside by an operator)
{status} = 'parked'

-- state_reference_outbox_purgeable --
-- idemdash reference schema: outbox rows that are purgeable
{status} = 'published' AND {published_at} < now() - %(retention)s

-- state_spring_modulith_outbox_pending_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are pending (the registry's own 'incomplete', JdbcEventPublicationRepositoryV2's SQL_STATEMENT_FIND_INCOMPLETE: a v1-era row with a completion date and a NULL status is complete), less what it counts as failed (findFailedPublications), which is counted there: a failed publication waits for someone to resubmit it, not for the relay
({completion_date} IS NULL OR {status} <> 'COMPLETED') AND ({state_spring_modulith_outbox_failed_v2}) IS NOT TRUE

-- state_spring_modulith_outbox_in_progress_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are in progress (no owner or lease is recorded)
{status} = 'PROCESSING'

-- state_spring_modulith_outbox_stuck_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are stuck (the staleness monitor's rule, measured from publication_date)
{status} IN ('PUBLISHED', 'PROCESSING', 'RESUBMITTED') AND {publication_date} < now() - %(stale_after)s

-- state_spring_modulith_outbox_done_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are done (exactly those not incomplete: completed, or v1-era with a completion date and a NULL status)
{completion_date} IS NOT NULL AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_spring_modulith_outbox_failed_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are failed (findFailedPublications: FAILED, and v1-era rows never completed)
({status} = 'FAILED' OR ({status} IS NULL AND {completion_date} IS NULL))

-- state_spring_modulith_outbox_purgeable_v2 --
-- Spring Modulith event publication registry, v2: outbox rows that are purgeable (deletePublicationsOlderThan; never a FAILED row, even with a completion date)
{completion_date} < now() - %(retention)s AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_spring_modulith_outbox_pending_v1 --
-- Spring Modulith event publication registry, v1: outbox rows that are pending (the registry's own 'incomplete')
{completion_date} IS NULL

-- state_spring_modulith_outbox_stuck_v1 --
-- Spring Modulith event publication registry, v1: outbox rows that are stuck (incomplete and published long ago)
{completion_date} IS NULL AND {publication_date} < now() - %(stale_after)s

-- state_spring_modulith_outbox_done_v1 --
-- Spring Modulith event publication registry, v1: outbox rows that are done
{completion_date} IS NOT NULL

-- state_spring_modulith_outbox_purgeable_v1 --
-- Spring Modulith event publication registry, v1: outbox rows that are purgeable (deletePublicationsOlderThan)
{completion_date} < now() - %(retention)s

-- state_spring_modulith_archive_purgeable_v2 --
-- Spring Modulith event publication registry, v2: archive rows that are purgeable
{completion_date} < now() - %(retention)s AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_masstransit_outbox_pending --
-- MassTransit Entity Framework Core outbox: outbox rows that are pending (a message row exists until it is sent, then it is deleted)
true

-- state_masstransit_outbox_state_stuck --
-- MassTransit Entity Framework Core outbox: outbox_state rows that are stuck (no lease: the delivery service only holds a row lock, taken with SKIP LOCKED)
{Delivered} IS NULL AND {Created} < now() - %(stale_after)s

-- state_masstransit_outbox_failed --
-- MassTransit Entity Framework Core outbox: outbox rows that are failed (orphans: messages whose OutboxState row is gone are never delivered)
{OutboxId} IS NOT NULL AND {OutboxId} NOT IN (SELECT {OutboxId} FROM {outbox_state})

-- state_masstransit_inbox_in_progress --
-- MassTransit Entity Framework Core outbox: inbox rows that are in progress (received, not yet consumed (a faulted consumer leaves it so))
{Consumed} IS NULL AND {Delivered} IS NULL

-- state_masstransit_inbox_stuck --
-- MassTransit Entity Framework Core outbox: inbox rows that are stuck
{Delivered} IS NULL AND {Received} < now() - %(stale_after)s

-- state_masstransit_inbox_done --
-- MassTransit Entity Framework Core outbox: inbox rows that are done
{Delivered} IS NOT NULL

-- state_masstransit_inbox_purgeable --
-- MassTransit Entity Framework Core outbox: inbox rows that are purgeable (InboxCleanupService's rule, Delivered < DateTime.UtcNow - window; a row never delivered is never deleted). A `timestamp` column (Npgsql's legacy switch, UtcNow written as is) compares right because a library's connections run in UTC (queries/target.py), and the library's index on Delivered serves it
{Delivered} < now() - %(retention)s

-- state_wolverine_inbox_pending --
-- Wolverine durable messaging (PostgreSQL): inbox rows that are pending (unowned Incoming: any node may recover it; Scheduled: waiting for execution_time)
({status} = 'Incoming' AND {owner_id} = 0) OR {status} = 'Scheduled'

-- state_wolverine_inbox_in_progress --
-- Wolverine durable messaging (PostgreSQL): inbox rows that are in progress (owned by node number owner_id)
{status} = 'Incoming' AND {owner_id} <> 0

-- state_wolverine_inbox_stuck --
-- Wolverine durable messaging (PostgreSQL): inbox rows that are stuck (Incoming owned by a node missing from wolverine_nodes while it lists any node, as Wolverine's own orphan sweep judges; Scheduled rows whose execution_time passed longer ago than the lease: overdue)
({status} = 'Incoming' AND {owner_id} <> 0 AND EXISTS (SELECT 1 FROM {nodes})
 AND {owner_id} NOT IN (SELECT {node_number} FROM {nodes}))
OR ({status} = 'Scheduled' AND {execution_time} < now() - %(stale_after)s)

-- state_wolverine_inbox_done --
-- Wolverine durable messaging (PostgreSQL): inbox rows that are done (kept until keep_until as the idempotency record)
{status} = 'Handled'

-- state_wolverine_inbox_purgeable --
-- Wolverine durable messaging (PostgreSQL): inbox rows that are purgeable
{status} = 'Handled' AND {keep_until} <= now()

-- state_wolverine_outbox_pending --
-- Wolverine durable messaging (PostgreSQL): outbox rows that are pending (a row exists until it is sent, then it is deleted)
true

-- state_wolverine_outbox_stuck --
-- Wolverine durable messaging (PostgreSQL): outbox rows that are stuck (owned by a node missing from wolverine_nodes while it lists any node, as Wolverine's orphan sweep judges)
{owner_id} <> 0 AND EXISTS (SELECT 1 FROM {nodes}) AND {owner_id} NOT IN (SELECT {node_number} FROM {nodes})

-- state_wolverine_dead_letters_failed --
-- Wolverine durable messaging (PostgreSQL): dead_letters rows that are failed (every row; replayable = true is queued for replay)
true

-- state_brandur_keys_pending --
-- Brandur-style idempotency keys: keys rows that are pending (unlocked and unfinished: waiting for a retry or the completer)
{recovery_point} <> 'finished' AND {locked_at} IS NULL

-- state_brandur_keys_in_progress --
-- Brandur-style idempotency keys: keys rows that are in progress
{recovery_point} <> 'finished' AND {locked_at} IS NOT NULL

-- state_brandur_keys_stuck --
-- Brandur-style idempotency keys: keys rows that are stuck (the lock timeout is 90 s (IDEMPOTENCY_KEY_LOCK_TIMEOUT))
{recovery_point} <> 'finished' AND {locked_at} < now() - %(lock_timeout)s

-- state_brandur_keys_done --
-- Brandur-style idempotency keys: keys rows that are done (error responses finish a key too: response_code says which)
{recovery_point} = 'finished'

-- state_brandur_keys_purgeable --
-- Brandur-style idempotency keys: keys rows that are purgeable (the reaper's 72 h, finished keys only)
{recovery_point} = 'finished' AND {created_at} < now() - %(retention)s

-- state_nservicebus_outbox_pending --
-- NServiceBus SQL persistence outbox: outbox rows that are pending (written in the handler's transaction, not yet dispatched; no creation time is recorded)
NOT {Dispatched}

-- state_nservicebus_outbox_done --
-- NServiceBus SQL persistence outbox: outbox rows that are done (also the deduplication record of the incoming MessageId)
{Dispatched}

-- state_nservicebus_outbox_purgeable --
-- NServiceBus SQL persistence outbox: outbox rows that are purgeable (DispatchedAt read as UTC whatever the server's time zone)
{Dispatched} AND {DispatchedAt} < (now() AT TIME ZONE 'UTC') - %(retention)s

-- state_eventuate_outbox_pending --
-- Eventuate Tram: outbox rows that are pending (not yet relayed by the CDC)
{published} = 0

-- state_eventuate_outbox_done --
-- Eventuate Tram: outbox rows that are done
{published} = 1

-- state_eventuate_outbox_purgeable --
-- Eventuate Tram: outbox rows that are purgeable
{published} = 1 AND {creation_time} < %(before_epoch_ms)s

-- state_eventuate_inbox_done --
-- Eventuate Tram: inbox rows that are done (a row is a message consumed once)
true

-- state_eventuate_inbox_purgeable --
-- Eventuate Tram: inbox rows that are purgeable
{creation_time} < %(before_epoch_ms)s

-- state_pg_transactional_outbox_pending --
-- pg-transactional-outbox: outbox and inbox rows that are pending (the two tables have one shape)
{processed_at} IS NULL AND {abandoned_at} IS NULL

-- state_pg_transactional_outbox_in_progress --
-- pg-transactional-outbox: outbox and inbox rows that are in progress (a worker took it: next_messages sets locked_until with started_attempts + 1, and until the attempt finishes started_attempts is ahead of finished_attempts; a locked_until ahead with the two equal is a message stored to run later, or a handler that threw waiting out the lease it had: pending, not taken)
{processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} > now() AND {started_attempts} > {finished_attempts}

-- state_pg_transactional_outbox_stuck --
-- pg-transactional-outbox: outbox and inbox rows that are stuck (a worker took it and its lease ran out without finishing)
{processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} <= now() AND {started_attempts} > {finished_attempts}

-- state_pg_transactional_outbox_done --
-- pg-transactional-outbox: outbox and inbox rows that are done
{processed_at} IS NOT NULL

-- state_pg_transactional_outbox_failed --
-- pg-transactional-outbox: outbox and inbox rows that are failed (poisonous or out of attempts)
{abandoned_at} IS NOT NULL

-- state_pg_transactional_outbox_purgeable --
-- pg-transactional-outbox: outbox and inbox rows that are purgeable
({processed_at} < now() - %(retention)s OR {abandoned_at} < now() - %(retention)s)

-- state_debezium_outbox_outbox_pending --
-- Debezium outbox event router: outbox rows that are pending (rows the replication slot may not have read: compare the slot's confirmed_flush_lsn with the current WAL position)
true

-- state_cap_outbox_pending --
-- DotNetCore.CAP (PostgreSQL): published rows that are pending (Scheduled: to be sent now or by the retry processor; Delayed: waiting for its publish time)
{StatusName} IN ('Scheduled', 'Delayed')

-- state_cap_outbox_in_progress --
-- DotNetCore.CAP (PostgreSQL): published rows that are in progress (Queued: publish time within a minute, in one instance's in-memory scheduler queue)
{StatusName} = 'Queued'

-- state_cap_outbox_stuck --
-- DotNetCore.CAP (PostgreSQL): published rows that are stuck: Scheduled since Added, or Queued since its publish time (ExpiresAt), longer than the lease; both naive local times, compared with now in %(library_zone)s
({StatusName} = 'Scheduled' AND {Added} < (now() AT TIME ZONE %(library_zone)s) - %(stale_after)s)
OR ({StatusName} = 'Queued' AND {ExpiresAt} < (now() AT TIME ZONE %(library_zone)s) - %(stale_after)s)

-- state_cap_outbox_done --
-- DotNetCore.CAP (PostgreSQL): published rows that are done (Succeeded)
{StatusName} = 'Succeeded'

-- state_cap_outbox_failed --
-- DotNetCore.CAP (PostgreSQL): published rows that are failed (Failed; Retries says how often it was tried)
{StatusName} = 'Failed'

-- state_cap_outbox_purgeable --
-- DotNetCore.CAP (PostgreSQL): published rows that are purgeable: DeleteExpiresAsync's rule (ExpiresAt passed by the local clock, %(library_zone)s; Succeeded or Failed), less Failed rows the retry processor would still retry (Retries < FailedRetryCount)
{ExpiresAt} < (now() AT TIME ZONE %(library_zone)s)
AND ({StatusName} = 'Succeeded' OR ({StatusName} = 'Failed' AND {Retries} >= %(failed_retry_count)s))

-- state_cap_inbox_pending --
-- DotNetCore.CAP (PostgreSQL): received rows that are pending (Scheduled: to be executed by its subscriber now or by the retry processor)
{StatusName} = 'Scheduled'

-- state_cap_inbox_stuck --
-- DotNetCore.CAP (PostgreSQL): received rows that are stuck: Scheduled since Added (a naive local time, compared with now in %(library_zone)s) longer than the lease
{StatusName} = 'Scheduled' AND {Added} < (now() AT TIME ZONE %(library_zone)s) - %(stale_after)s

-- state_cap_inbox_done --
-- DotNetCore.CAP (PostgreSQL): received rows that are done (Succeeded)
{StatusName} = 'Succeeded'

-- state_cap_inbox_failed --
-- DotNetCore.CAP (PostgreSQL): received rows that are failed (Failed; Retries says how often it was tried)
{StatusName} = 'Failed'

-- state_cap_inbox_purgeable --
-- DotNetCore.CAP (PostgreSQL): received rows that are purgeable: DeleteExpiresAsync's rule (ExpiresAt passed by the local clock, %(library_zone)s; Succeeded or Failed), less Failed rows the retry processor would still retry (Retries < FailedRetryCount)
{ExpiresAt} < (now() AT TIME ZONE %(library_zone)s)
AND ({StatusName} = 'Succeeded' OR ({StatusName} = 'Failed' AND {Retries} >= %(failed_retry_count)s))

-- state_dbos_keys_pending --
-- DBOS Transact (system database): keys rows that are pending (ENQUEUED or DELAYED: waiting in a queue)
{status} IN ('ENQUEUED', 'DELAYED')

-- state_dbos_keys_in_progress --
-- DBOS Transact (system database): keys rows that are in progress (PENDING: an executor runs it)
{status} = 'PENDING'

-- state_dbos_keys_stuck --
-- DBOS Transact (system database): keys rows that are stuck (PENDING that no launch will recover: a launch recovers only its own executor_id's, application_version's and application's, so one whose version is not the latest its application registered in application_versions, or whose executor has been silent since %(stale_before_epoch_ms)s: no workflow of that executor started or finished (through DBOS's own partial indexes on started_at_epoch_ms and completed_at), this one not updated and none of its steps completed since, the tables keeping no heartbeat)
{status} = 'PENDING' AND (
    (coalesce({application_name}, ''), {application_version}) NOT IN (
        SELECT DISTINCT ON (coalesce({application_name}, '')) coalesce({application_name}, ''), {version_name}
        FROM {application_versions}
        ORDER BY coalesce({application_name}, ''), {version_timestamp} DESC)
    OR ({updated_at} < %(stale_before_epoch_ms)s
        AND {executor_id} NOT IN (SELECT {executor_id} FROM {keys}
                                  WHERE ({started_at_epoch_ms} >= %(stale_before_epoch_ms)s
                                         OR {completed_at} >= %(stale_before_epoch_ms)s)
                                    AND {executor_id} IS NOT NULL)
        AND {workflow_uuid} NOT IN (SELECT {workflow_uuid} FROM {operation_outputs}
                                    WHERE {completed_at_epoch_ms} >= %(stale_before_epoch_ms)s)))

-- state_dbos_keys_done --
-- DBOS Transact (system database): keys rows that are done (SUCCESS)
{status} = 'SUCCESS'

-- state_dbos_keys_failed --
-- DBOS Transact (system database): keys rows that are failed (ERROR, CANCELLED or MAX_RECOVERY_ATTEMPTS_EXCEEDED: the poison list)
{status} IN ('ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')

-- state_dbos_keys_purgeable --
-- DBOS Transact (system database): keys rows that are purgeable (terminal, last updated before the retention (%(before_epoch_ms)s) and the replay horizon (%(horizon_before_epoch_ms)s), never PENDING, ENQUEUED or DELAYED; a child workflow only with its parent: never a descendant (through parent_workflow_id) of a workflow that is not so). The ancestors are walked up from each candidate (its parent_workflow_id, through the primary key): a child costs its depth, a workflow without a parent nothing.
{status} IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')
AND {updated_at} < %(before_epoch_ms)s AND {updated_at} < %(horizon_before_epoch_ms)s
AND ({parent_workflow_id} IS NULL OR NOT EXISTS (
    WITH RECURSIVE ancestors (id) AS (
        SELECT {parent_workflow_id}
        UNION
        SELECT p.{parent_workflow_id} FROM {keys} p JOIN ancestors a ON p.{workflow_uuid} = a.id
        WHERE p.{parent_workflow_id} IS NOT NULL
    )
    SELECT 1 FROM ancestors a JOIN {keys} p ON p.{workflow_uuid} = a.id
    WHERE p.{status} NOT IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')
       OR p.{updated_at} >= %(before_epoch_ms)s OR p.{updated_at} >= %(horizon_before_epoch_ms)s))

-- state_dbos_operation_outputs_done --
-- DBOS Transact (system database): operation_outputs rows that are done (a completed step)
{completed_at_epoch_ms} IS NOT NULL
