"""The digest: facts, the distill policy, memory writes, conflicts, the journal."""
