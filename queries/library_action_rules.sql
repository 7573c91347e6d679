-- action_wolverine_release_dead_node --
-- Wolverine's orphan sweep (ReleaseOrphanedMessagesCommand): an envelope owned by a node number missing from wolverine_nodes, while that table lists any node at all (an empty node table is no evidence that every owner is dead).
{owner_id} <> 0 AND EXISTS (SELECT 1 FROM {nodes}) AND {owner_id} NOT IN (SELECT {node_number} FROM {nodes})

-- action_wolverine_release_dead_node_sets --
-- Wolverine's orphan sweep's assignment: unowned, for any node to recover.
{owner_id} = 0

-- action_wolverine_replay_dead_letter --
-- Wolverine's dead-letter replay (ReplayAsync): a dead letter not already marked for replay.
{replayable} IS NOT TRUE

-- action_wolverine_replay_dead_letter_sets --
-- Wolverine's dead-letter replay's assignment: its durability agent moves replayable rows back to the incoming table.
{replayable} = true
