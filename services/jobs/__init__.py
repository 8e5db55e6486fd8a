"""Long reward batches: the job API engine, the runner, the Redis store, recovery, Celery."""
