-- Pages owed to on-call live in the rows that owe them, written by the statement that
-- settles the attempt or moves the circuit, so a replica that dies right after cannot
-- lose them: any replica's pager takes what is owed and clears it in one transaction.

-- The pages an event's settled attempts owe ('dead_letter', 'unauthorized'), until a
-- pager records them.
ALTER TABLE finance_outbox ADD COLUMN page_owed text[];
CREATE INDEX finance_outbox_page_owed_idx ON finance_outbox (id) WHERE page_owed IS NOT NULL;

-- The last transition of a circuit ('opened', 'reopened', 'closed') and the generation
-- a pager last announced: a circuit whose generation is ahead owes a page.
ALTER TABLE finance_breakers
    ADD COLUMN last_transition text CHECK (last_transition IN ('opened', 'reopened', 'closed')),
    ADD COLUMN announced_generation bigint NOT NULL DEFAULT 0;
UPDATE finance_breakers SET announced_generation = generation; -- nothing owed from before
