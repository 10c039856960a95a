-- 0023_broker_positions: how far a broker's publisher published the log.
--
-- One row per broker (a name): the id up to which the events were
-- published and acknowledged. Only the holder of the broker's advisory
-- lock writes it (see AcquireLease).
CREATE TABLE broker_positions (
    name      text COLLATE "C" PRIMARY KEY,
    published bigint NOT NULL
);
