// Peer 3 of `make bench-peers`: a merchant's own Stripe webhook and order status, written as
// Stripe's and Express's documentation show (stripe.webhooks.constructEvent on the raw body
// from express.raw), on PostgreSQL through node-postgres's Pool, with the SQL of the FastAPI
// peers. Not part of edge: the bench installs express, stripe and pg (package.json beside this
// file) into bench/results/peers-env/node and runs it as one Node.js process (no cluster), with
// NODE_ENV=production.
//
// Settings, from the environment: DATABASE_URL, PROJECTS_FILE (JSON: {project id: {api_key,
// webhook_secret}}), STRIPE_API_KEY, PORT. It listens on 127.0.0.1:PORT.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const express = require('express');
const { Pool } = require('pg');
const stripe = require('stripe')(process.env.STRIPE_API_KEY);

const projects = JSON.parse(fs.readFileSync(process.env.PROJECTS_FILE, 'utf8'));
const pool = new Pool({ connectionString: process.env.DATABASE_URL }); // max: 10 by default

const STORE_EVENT =
  'INSERT INTO events (id, project, type, payload) VALUES ($1, $2, $3, $4)' +
  ' ON CONFLICT (id) DO NOTHING';
const MARK_PAID =
  "UPDATE orders SET status = 'paid', updated_at = now()" +
  ' WHERE id = $1 AND project = $2 AND amount_total = $3 AND currency = $4' +
  " AND status = 'pending'";
const READ_ORDER =
  'SELECT id, status, amount_total, currency FROM orders WHERE id = $1 AND project = $2';

const app = express();

app.post('/webhook/stripe/:project', express.raw({ type: 'application/json' }), async (req, res) => {
  const project = projects[req.params.project];
  if (!project) {
    return res.status(404).json({ error: 'Unknown project' });
  }
  let event;
  try {
    event = stripe.webhooks.constructEvent(
      req.body,
      req.headers['stripe-signature'],
      project.webhook_secret,
    );
  } catch (err) {
    return res.status(400).send(`Webhook Error: ${err.message}`);
  }

  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const stored = await client.query(STORE_EVENT, [
      event.id,
      req.params.project,
      event.type,
      req.body.toString('utf8'),
    ]);
    if (stored.rowCount === 1 && event.type === 'checkout.session.completed') {
      const session = event.data.object;
      await client.query(MARK_PAID, [
        session.client_reference_id,
        req.params.project,
        session.amount_total,
        session.currency,
      ]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
  res.json({ received: true });
});

// A constant-time comparison of the bearer key with the project's.
function sameKey(given, expected) {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

app.get('/status/:project/:tx', async (req, res) => {
  const project = projects[req.params.project];
  const header = req.get('authorization') || '';
  const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
  if (!project || !sameKey(token, project.api_key)) {
    return res.status(401).json({ error: 'Invalid API key' });
  }
  const { rows } = await pool.query(READ_ORDER, [req.params.tx, req.params.project]);
  if (rows.length === 0) {
    return res.status(404).json({ error: 'Order not found' });
  }
  const order = rows[0];
  res.json({
    id: order.id,
    status: order.status,
    amount: Number(order.amount_total), // bigint comes back as a string
    currency: order.currency,
  });
});

const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close(() => pool.end());
});
