DROP TABLE IF EXISTS finance_breakers;
