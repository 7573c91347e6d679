-- state_reference_keys_in_progress --
-- idemdash reference schema: how many keys rows are in progress
SELECT count(*) FROM {table} WHERE {status} = 'processing'

-- state_reference_keys_stuck --
-- idemdash reference schema: how many keys rows are stuck (a key without a lease end is stuck once claimed longer ago than the lease (IDEMDASH_LEASE_SECONDS))
SELECT count(*) FROM {table} WHERE {status} = 'processing' AND {locked_until} < now()

-- state_reference_keys_done --
-- idemdash reference schema: how many keys rows are done
SELECT count(*) FROM {table} WHERE {status} = 'succeeded'

-- state_reference_keys_failed --
-- idemdash reference schema: how many keys rows are failed (failed_retryable may be claimed again; failed_final is final)
SELECT count(*) FROM {table} WHERE {status} IN ('failed_retryable', 'failed_final')

-- state_reference_keys_purgeable --
-- idemdash reference schema: how many keys rows are purgeable (and no operator decision on the key within the replay horizon)
SELECT count(*) FROM {table} WHERE {status} IN ('succeeded', 'failed_final') AND {expires_at} < now()

-- state_reference_inbox_done --
-- idemdash reference schema: how many inbox rows are done (a row is a message consumed once)
SELECT count(*) FROM {table} WHERE true

-- state_reference_inbox_purgeable --
-- idemdash reference schema: how many inbox rows are purgeable
SELECT count(*) FROM {table} WHERE {processed_at} < now() - %(retention)s

-- state_reference_outbox_pending --
-- idemdash reference schema: how many outbox rows are pending
SELECT count(*) FROM {table} WHERE {status} = 'pending'

-- state_reference_outbox_done --
-- idemdash reference schema: how many outbox rows are done
SELECT count(*) FROM {table} WHERE {status} = 'published'

-- state_reference_outbox_failed --
-- idemdash reference schema: how many outbox rows are failed (set aside by an operator)
SELECT count(*) FROM {table} WHERE {status} = 'parked'

-- state_reference_outbox_purgeable --
-- idemdash reference schema: how many outbox rows are purgeable
SELECT count(*) FROM {table} WHERE {status} = 'published' AND {published_at} < now() - %(retention)s

-- state_spring_modulith_outbox_pending_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are pending (the registry's own 'incomplete', JdbcEventPublicationRepositoryV2's SQL_STATEMENT_FIND_INCOMPLETE: a v1-era row with a completion date and a NULL status is complete)
SELECT count(*) FROM {table} WHERE ({completion_date} IS NULL OR {status} <> 'COMPLETED')

-- state_spring_modulith_outbox_in_progress_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are in progress (no owner or lease is recorded)
SELECT count(*) FROM {table} WHERE {status} = 'PROCESSING'

-- state_spring_modulith_outbox_stuck_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are stuck (the staleness monitor's rule, measured from publication_date)
SELECT count(*) FROM {table} WHERE {status} IN ('PUBLISHED', 'PROCESSING', 'RESUBMITTED') AND {publication_date} < now() - %(stale_after)s

-- state_spring_modulith_outbox_done_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are done (exactly those not incomplete: completed, or v1-era with a completion date and a NULL status)
SELECT count(*) FROM {table} WHERE {completion_date} IS NOT NULL AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_spring_modulith_outbox_failed_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are failed (findFailedPublications: FAILED, and v1-era rows never completed)
SELECT count(*) FROM {table} WHERE ({status} = 'FAILED' OR ({status} IS NULL AND {completion_date} IS NULL))

-- state_spring_modulith_outbox_purgeable_v2 --
-- Spring Modulith event publication registry, v2: how many outbox rows are purgeable (deletePublicationsOlderThan; never a FAILED row, even with a completion date)
SELECT count(*) FROM {table} WHERE {completion_date} < now() - %(retention)s AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_spring_modulith_outbox_pending_v1 --
-- Spring Modulith event publication registry, v1: how many outbox rows are pending (the registry's own 'incomplete')
SELECT count(*) FROM {table} WHERE {completion_date} IS NULL

-- state_spring_modulith_outbox_stuck_v1 --
-- Spring Modulith event publication registry, v1: how many outbox rows are stuck (incomplete and published long ago)
SELECT count(*) FROM {table} WHERE {completion_date} IS NULL AND {publication_date} < now() - %(stale_after)s

-- state_spring_modulith_outbox_done_v1 --
-- Spring Modulith event publication registry, v1: how many outbox rows are done
SELECT count(*) FROM {table} WHERE {completion_date} IS NOT NULL

-- state_spring_modulith_outbox_purgeable_v1 --
-- Spring Modulith event publication registry, v1: how many outbox rows are purgeable (deletePublicationsOlderThan)
SELECT count(*) FROM {table} WHERE {completion_date} < now() - %(retention)s

-- state_spring_modulith_archive_purgeable_v2 --
-- Spring Modulith event publication registry, v2: how many archive rows are purgeable
SELECT count(*) FROM {table} WHERE {completion_date} < now() - %(retention)s AND ({status} = 'COMPLETED' OR {status} IS NULL)

-- state_masstransit_outbox_pending --
-- MassTransit Entity Framework Core outbox: how many outbox rows are pending (a message row exists until it is sent, then it is deleted)
SELECT count(*) FROM {table} WHERE true

-- state_masstransit_outbox_state_stuck --
-- MassTransit Entity Framework Core outbox: how many outbox_state rows are stuck (no lease: the delivery service only holds a row lock, taken with SKIP LOCKED)
SELECT count(*) FROM {table} WHERE {Delivered} IS NULL AND {Created} < now() - %(stale_after)s

-- state_masstransit_outbox_failed --
-- MassTransit Entity Framework Core outbox: how many outbox rows are failed (orphans: messages whose OutboxState row is gone are never delivered)
SELECT count(*) FROM {table} WHERE {OutboxId} IS NOT NULL AND {OutboxId} NOT IN (SELECT {OutboxId} FROM {outbox_state})

-- state_masstransit_inbox_in_progress --
-- MassTransit Entity Framework Core outbox: how many inbox rows are in progress (received, not yet consumed (a faulted consumer leaves it so))
SELECT count(*) FROM {table} WHERE {Consumed} IS NULL AND {Delivered} IS NULL

-- state_masstransit_inbox_stuck --
-- MassTransit Entity Framework Core outbox: how many inbox rows are stuck
SELECT count(*) FROM {table} WHERE {Delivered} IS NULL AND {Received} < now() - %(stale_after)s

-- state_masstransit_inbox_done --
-- MassTransit Entity Framework Core outbox: how many inbox rows are done
SELECT count(*) FROM {table} WHERE {Delivered} IS NOT NULL

-- state_masstransit_inbox_purgeable --
-- MassTransit Entity Framework Core outbox: how many inbox rows are purgeable (InboxCleanupService's rule; a row never delivered is never deleted)
SELECT count(*) FROM {table} WHERE {Delivered} < now() - %(retention)s

-- state_wolverine_inbox_pending --
-- Wolverine durable messaging (PostgreSQL): how many inbox rows are pending (unowned: any node may recover it)
SELECT count(*) FROM {table} WHERE {status} = 'Incoming' AND {owner_id} = 0

-- state_wolverine_inbox_in_progress --
-- Wolverine durable messaging (PostgreSQL): how many inbox rows are in progress (owned by node number owner_id)
SELECT count(*) FROM {table} WHERE {status} = 'Incoming' AND {owner_id} <> 0

-- state_wolverine_inbox_stuck --
-- Wolverine durable messaging (PostgreSQL): how many inbox rows are stuck (owned by a node missing from wolverine_nodes; Scheduled rows past execution_time are overdue)
SELECT count(*) FROM {table} WHERE {status} = 'Incoming' AND {owner_id} <> 0 AND {owner_id} NOT IN (SELECT {node_number} FROM {nodes})

-- state_wolverine_inbox_done --
-- Wolverine durable messaging (PostgreSQL): how many inbox rows are done (kept until keep_until as the idempotency record)
SELECT count(*) FROM {table} WHERE {status} = 'Handled'

-- state_wolverine_inbox_purgeable --
-- Wolverine durable messaging (PostgreSQL): how many inbox rows are purgeable
SELECT count(*) FROM {table} WHERE {status} = 'Handled' AND {keep_until} <= now()

-- state_wolverine_outbox_pending --
-- Wolverine durable messaging (PostgreSQL): how many outbox rows are pending (a row exists until it is sent, then it is deleted)
SELECT count(*) FROM {table} WHERE true

-- state_wolverine_outbox_stuck --
-- Wolverine durable messaging (PostgreSQL): how many outbox rows are stuck
SELECT count(*) FROM {table} WHERE {owner_id} <> 0 AND {owner_id} NOT IN (SELECT {node_number} FROM {nodes})

-- state_wolverine_dead_letters_failed --
-- Wolverine durable messaging (PostgreSQL): how many dead_letters rows are failed (every row; replayable = true is queued for replay)
SELECT count(*) FROM {table} WHERE true

-- state_brandur_keys_pending --
-- Brandur-style idempotency keys: how many keys rows are pending (unlocked and unfinished: waiting for a retry or the completer)
SELECT count(*) FROM {table} WHERE {recovery_point} <> 'finished' AND {locked_at} IS NULL

-- state_brandur_keys_in_progress --
-- Brandur-style idempotency keys: how many keys rows are in progress
SELECT count(*) FROM {table} WHERE {recovery_point} <> 'finished' AND {locked_at} IS NOT NULL

-- state_brandur_keys_stuck --
-- Brandur-style idempotency keys: how many keys rows are stuck (the lock timeout is 90 s (IDEMPOTENCY_KEY_LOCK_TIMEOUT))
SELECT count(*) FROM {table} WHERE {recovery_point} <> 'finished' AND {locked_at} < now() - %(lock_timeout)s

-- state_brandur_keys_done --
-- Brandur-style idempotency keys: how many keys rows are done (error responses finish a key too: response_code says which)
SELECT count(*) FROM {table} WHERE {recovery_point} = 'finished'

-- state_brandur_keys_purgeable --
-- Brandur-style idempotency keys: how many keys rows are purgeable (the reaper's 72 h, finished keys only)
SELECT count(*) FROM {table} WHERE {recovery_point} = 'finished' AND {created_at} < now() - %(retention)s

-- state_nservicebus_outbox_pending --
-- NServiceBus SQL persistence outbox: how many outbox rows are pending (written in the handler's transaction, not yet dispatched; no creation time is recorded)
SELECT count(*) FROM {table} WHERE NOT {Dispatched}

-- state_nservicebus_outbox_done --
-- NServiceBus SQL persistence outbox: how many outbox rows are done (also the deduplication record of the incoming MessageId)
SELECT count(*) FROM {table} WHERE {Dispatched}

-- state_nservicebus_outbox_purgeable --
-- NServiceBus SQL persistence outbox: how many outbox rows are purgeable (DispatchedAt read as UTC whatever the server's time zone)
SELECT count(*) FROM {table} WHERE {Dispatched} AND {DispatchedAt} < (now() AT TIME ZONE 'UTC') - %(retention)s

-- state_eventuate_outbox_pending --
-- Eventuate Tram: how many outbox rows are pending (not yet relayed by the CDC)
SELECT count(*) FROM {table} WHERE {published} = 0

-- state_eventuate_outbox_done --
-- Eventuate Tram: how many outbox rows are done
SELECT count(*) FROM {table} WHERE {published} = 1

-- state_eventuate_outbox_purgeable --
-- Eventuate Tram: how many outbox rows are purgeable
SELECT count(*) FROM {table} WHERE {published} = 1 AND {creation_time} < %(before_epoch_ms)s

-- state_eventuate_inbox_done --
-- Eventuate Tram: how many inbox rows are done (a row is a message consumed once)
SELECT count(*) FROM {table} WHERE true

-- state_eventuate_inbox_purgeable --
-- Eventuate Tram: how many inbox rows are purgeable
SELECT count(*) FROM {table} WHERE {creation_time} < %(before_epoch_ms)s

-- state_pg_transactional_outbox_outbox_pending --
-- pg-transactional-outbox: how many outbox rows are pending
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL

-- state_pg_transactional_outbox_outbox_in_progress --
-- pg-transactional-outbox: how many outbox rows are in progress
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} > now()

-- state_pg_transactional_outbox_outbox_stuck --
-- pg-transactional-outbox: how many outbox rows are stuck (a worker took it and its lease ran out without finishing)
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} <= now() AND {started_attempts} > {finished_attempts}

-- state_pg_transactional_outbox_outbox_done --
-- pg-transactional-outbox: how many outbox rows are done
SELECT count(*) FROM {table} WHERE {processed_at} IS NOT NULL

-- state_pg_transactional_outbox_outbox_failed --
-- pg-transactional-outbox: how many outbox rows are failed (poisonous or out of attempts)
SELECT count(*) FROM {table} WHERE {abandoned_at} IS NOT NULL

-- state_pg_transactional_outbox_outbox_purgeable --
-- pg-transactional-outbox: how many outbox rows are purgeable
SELECT count(*) FROM {table} WHERE ({processed_at} < now() - %(retention)s OR {abandoned_at} < now() - %(retention)s)

-- state_pg_transactional_outbox_inbox_pending --
-- pg-transactional-outbox: how many inbox rows are pending
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL

-- state_pg_transactional_outbox_inbox_in_progress --
-- pg-transactional-outbox: how many inbox rows are in progress
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} > now()

-- state_pg_transactional_outbox_inbox_stuck --
-- pg-transactional-outbox: how many inbox rows are stuck (a worker took it and its lease ran out without finishing)
SELECT count(*) FROM {table} WHERE {processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} <= now() AND {started_attempts} > {finished_attempts}

-- state_pg_transactional_outbox_inbox_done --
-- pg-transactional-outbox: how many inbox rows are done
SELECT count(*) FROM {table} WHERE {processed_at} IS NOT NULL

-- state_pg_transactional_outbox_inbox_failed --
-- pg-transactional-outbox: how many inbox rows are failed (poisonous or out of attempts)
SELECT count(*) FROM {table} WHERE {abandoned_at} IS NOT NULL

-- state_pg_transactional_outbox_inbox_purgeable --
-- pg-transactional-outbox: how many inbox rows are purgeable
SELECT count(*) FROM {table} WHERE ({processed_at} < now() - %(retention)s OR {abandoned_at} < now() - %(retention)s)

-- state_debezium_outbox_outbox_pending --
-- Debezium outbox event router: how many outbox rows are pending (rows the replication slot may not have read: compare the slot's confirmed_flush_lsn with the current WAL position)
SELECT count(*) FROM {table} WHERE true
