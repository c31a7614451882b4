DROP TABLE IF EXISTS logistics_processed_events;
DROP TABLE IF EXISTS shipment_history;
DROP TABLE IF EXISTS shipments;
