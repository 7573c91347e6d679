"""DBOS Transact's system database: durable workflows (workflow_status), their steps, inputs and outputs.

Follows the dbos package 3.4.0 (PyPI): the tables are the ones dbos/_migration.py creates (workflow_status in
migration one; workflow_input and workflow_output in migration 109; operation_outputs' foreign key dropped in 112),
times are epoch milliseconds. Recovery is dbos/_recovery.py and _sys_db.py's get_pending_workflows: a process, when
it launches, recovers only the PENDING workflows of its own executor_id, application_version and application name.
The current version is the latest row of application_versions (_sys_db.py's get_latest_application_version); no
table records an executor's heartbeat, so an executor is taken for silent when none of its workflows started or
finished, and the workflow was not updated and completed no step, within DEFAULT_LEASE_SECONDS. The columns it
requires (application_name, completed_at among them) are those of DBOS 3.x's later migrations (100 and 36). DBOS's
own delete (_sys_db.py's
_delete_workflows) deletes workflow_input, workflow_output and operation_outputs rows with the status row; a purge
does the same in the same statement (``Table.dependents``).
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "dbos-inc/dbos-transact-py"
_COMMIT = "v3.4.0"  # the PyPI release dbos==3.4.0; the files below are its dbos/ package

PROFILE = Profile(
    name="dbos",
    library="DBOS Transact (system database)",
    default_schema="dbos",
    tables=(
        Table(
            "keys",
            "workflow_status",
            "keys_table",
            (
                Column("workflow_uuid", TEXT),
                Column("status", TEXT),
                Column("name", TEXT),
                Column("executor_id", TEXT),
                Column("application_version", TEXT),
                Column("queue_name", TEXT),
                Column("recovery_attempts", INTEGER),
                Column("created_at", INTEGER),
                Column("updated_at", INTEGER),
                Column("parent_workflow_id", TEXT),
                Column("application_name", TEXT),
                Column("started_at_epoch_ms", INTEGER),
                Column("completed_at", INTEGER),
            ),
            identity=("workflow_uuid",),
            state="status",
            owner="executor_id",
            attempts="recovery_attempts",
            times=(Time("created_at", "created", EPOCH_MS), Time("updated_at", "updated", EPOCH_MS, done=True)),
            payload="inputs",
            error="error",
            changed="updated_at",
            dependents=(
                Dependent("workflow_input", "workflow_uuid", "workflow_uuid"),
                Dependent("workflow_output", "workflow_uuid", "workflow_uuid"),
                Dependent("operation_outputs", "workflow_uuid", "workflow_uuid"),
            ),
        ),
        Table(
            "operation_outputs",
            "operation_outputs",
            "operation_outputs_table",
            (Column("workflow_uuid", TEXT), Column("function_id", INTEGER), Column("function_name", TEXT)),
            identity=("workflow_uuid", "function_id"),
            times=(Time("completed_at_epoch_ms", "completed", EPOCH_MS),),
            payload="output",
            error="error",
            optional=True,
        ),
        Table(
            "workflow_input",
            "workflow_input",
            "workflow_input_table",
            (Column("workflow_uuid", TEXT), Column("inputs", TEXT), Column("retention_timestamp", INTEGER)),
            identity=("workflow_uuid",),
            payload="inputs",
            optional=True,
        ),
        Table(
            "workflow_output",
            "workflow_output",
            "workflow_output_table",
            (
                Column("workflow_uuid", TEXT),
                Column("output", TEXT),
                Column("error", TEXT),
                Column("retention_timestamp", INTEGER),
            ),
            identity=("workflow_uuid",),
            payload="output",
            error="error",
            optional=True,
        ),
        Table(
            "application_versions",
            "application_versions",
            "application_versions_table",
            (Column("version_id", TEXT), Column("version_name", TEXT), Column("version_timestamp", INTEGER)),
            identity=("version_id",),
            times=(Time("version_timestamp", "made latest", EPOCH_MS),),
            optional=True,
        ),
    ),
    states=(
        State(PENDING, "keys", "state_dbos_keys_pending", "ENQUEUED or DELAYED: waiting in a queue"),
        State(IN_PROGRESS, "keys", "state_dbos_keys_in_progress", "PENDING: an executor runs it"),
        State(
            STUCK,
            "keys",
            "state_dbos_keys_stuck",
            "PENDING that no launch will recover: its application version is no longer the latest, or its "
            "executor has been silent past DEFAULT_LEASE_SECONDS (the tables keep no heartbeat)",
        ),
        State(DONE, "keys", "state_dbos_keys_done", "SUCCESS"),
        State(FAILED, "keys", "state_dbos_keys_failed", "ERROR, CANCELLED or MAX_RECOVERY_ATTEMPTS_EXCEEDED"),
        State(
            PURGEABLE,
            "keys",
            "state_dbos_keys_purgeable",
            "terminal, updated before the retention and the replay horizon, and so is every workflow above it "
            "(a child goes only with its parent); its steps, input and output go with it",
            order="created_at",
        ),
        State(DONE, "operation_outputs", "state_dbos_operation_outputs_done", "a completed step"),
    ),
    indexes=(
        Index(
            "keys",
            "executor",
            "profile_index_dbos_keys_executor",
            "workflows by executor and last update (DBOS 3.4 dropped its executor_id index): a stuck "
            "workflow's page says since when its executor has been silent without reading every workflow",
        ),
    ),
    facts=(
        Fact("keys", "Why it is stuck", "fact_dbos_keys_why_stuck"),
        Fact("keys", "Last completed step", "fact_dbos_keys_last_step"),
    ),
    commands=(
        Command(
            "keys",
            "Resume it (DBOS re-enqueues it; an executor of the current version runs it on)",
            'dbos workflow resume {workflow_uuid} -s "$DBOS_SYSTEM_DATABASE_URL" --schema {schema}',
            (STUCK,),
        ),
        Command(
            "keys",
            "Cancel it (no executor runs or recovers it again)",
            'dbos workflow cancel {workflow_uuid} -s "$DBOS_SYSTEM_DATABASE_URL" --schema {schema}',
            (STUCK, IN_PROGRESS, PENDING),
        ),
    ),
    cleanup="DBOS deletes a workflow only when asked (DBOS.delete_workflow(s), delete_children=True for the "
    "workflows it started): _sys_db.py's _delete_workflows deletes its workflow_input, workflow_output and "
    "operation_outputs rows, then its workflow_status row, whose other tables cascade, in one transaction.",
    sources=(
        Source(_REPO, "dbos/_migration.py", _COMMIT),
        Source(_REPO, "dbos/_sys_db.py", _COMMIT),
        Source(_REPO, "dbos/_recovery.py", _COMMIT),
        Source(_REPO, "dbos/_dbos.py", _COMMIT),
    ),
)
