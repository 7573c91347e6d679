"""Scheduled jobs: retention purges and metric snapshots, run by APScheduler."""
