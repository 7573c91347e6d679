-- The row triggers of 0001 stop UPDATE and DELETE; TRUNCATE needs a statement trigger.
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON idemdash.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION idemdash.audit_log_append_only();
