-- SPDX-License-Identifier: MIT
-- The project's SQL workload (tests and memres-bench scenario "sqlite"):
-- a small shop.  Schema with indexes, bulk inserts in transactions, joins,
-- LIKE, GROUP BY / HAVING, text and blobs (large ones too: overflow pages),
-- updates, deletes, a rolled-back transaction, a late index, and a
-- rebuilt table.  The size is params.n (customers; orders are 10 per
-- customer).  Every SELECT is ordered: its rows are the same on any
-- allocator.
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, created INTEGER);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER NOT NULL REFERENCES customers(id),
                    amount REAL, note TEXT, payload BLOB);
CREATE TABLE items(order_id INTEGER, sku TEXT, qty INTEGER, PRIMARY KEY(order_id, sku)) WITHOUT ROWID;
CREATE INDEX orders_customer ON orders(customer);
CREATE INDEX customers_city ON customers(city, name);
CREATE INDEX orders_amount ON orders(amount);

BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT n FROM params))
INSERT INTO customers
  SELECT x, 'customer_' || x || '_' || substr('abcdefghijklmnopqrstuvwxyzabcdefghij', x % 26 + 1, 5),
         CASE x % 7 WHEN 0 THEN 'Berlin' WHEN 1 THEN 'Lisbon' WHEN 2 THEN 'Oslo' WHEN 3 THEN 'Porto'
                    WHEN 4 THEN 'Quito' WHEN 5 THEN 'Riga' ELSE 'Tunis' END,
         1600000000 + x * 86400
  FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT n * 10 FROM params))
INSERT INTO orders
  SELECT x, (x * 7919) % (SELECT n FROM params) + 1, ((x * 31337) % 100000) / 100.0,
         printf('order %d: %s', x, hex(x * x)),
         zeroblob(x % 300) || CAST(printf('%d', x) AS BLOB)
  FROM c;
COMMIT;

BEGIN;
INSERT INTO items SELECT id, 'sku-' || (id * 13 % 50), id % 11 FROM orders;
INSERT INTO items SELECT id, 'sku-' || (id * 29 % 50 + 50), id % 7 + 1 FROM orders;
INSERT OR IGNORE INTO items SELECT id, 'sku-' || (id % 100), 3 FROM orders WHERE id % 3 = 0;
COMMIT;

-- large text and blobs (overflow pages)
UPDATE customers SET name = name || printf('%.*c', 2000 + id % 3000, 'x') WHERE id % 50 = 0;
UPDATE orders SET payload = zeroblob(5000 + id % 4000) WHERE id % 97 = 0;

SELECT 'orders', count(*), round(sum(amount), 2), sum(length(payload)) FROM orders;
SELECT city, count(*), round(avg(o.amount), 2), max(o.id)
  FROM customers c JOIN orders o ON o.customer = c.id GROUP BY city ORDER BY city;
SELECT id, substr(name, 1, 20) FROM customers WHERE name LIKE '%_abcde%' ORDER BY id LIMIT 5;
SELECT count(*) FROM orders WHERE note LIKE 'order 1%' AND amount BETWEEN 100 AND 500;

BEGIN;
UPDATE orders SET amount = round(amount * 1.1, 2), note = note || ' (revised)' WHERE id % 13 = 0;
DELETE FROM items WHERE qty > 8;
DELETE FROM orders WHERE id % 17 = 0;
DELETE FROM items WHERE order_id NOT IN (SELECT id FROM orders);
COMMIT;

BEGIN;
DELETE FROM orders WHERE amount > 100;
UPDATE customers SET city = 'Nowhere';
ROLLBACK;

SELECT c.city, i.sku, sum(i.qty) AS q, count(DISTINCT o.customer)
  FROM items i JOIN orders o ON o.id = i.order_id JOIN customers c ON c.id = o.customer
  GROUP BY c.city, i.sku HAVING q > 5 * (SELECT n FROM params) / 100
  ORDER BY q DESC, c.city, i.sku LIMIT 12;
SELECT customer, count(*), round(sum(amount), 2) FROM orders
  GROUP BY customer ORDER BY 3 DESC, 1 LIMIT 8;
SELECT count(*), sum(length(note)), count(DISTINCT substr(note, -9)) FROM orders WHERE note LIKE '%(revised)';

CREATE INDEX items_sku ON items(sku, qty);
SELECT sku, sum(qty), count(*) FROM items WHERE sku LIKE 'sku-4%' GROUP BY sku ORDER BY sku;

CREATE TABLE orders2 AS SELECT id, customer, amount, upper(note) AS note FROM orders WHERE id % 2 = 0;
DROP TABLE orders;
SELECT count(*), round(sum(amount), 2), max(length(note)) FROM orders2;
SELECT group_concat(city, ',') FROM (SELECT DISTINCT city FROM customers ORDER BY city);
