import os
from functools import partial

import tock

client = tock.Client(os.environ["TOCK_URL"], os.environ["TOCK_TOKEN"])
ping = partial(tock.JobSpec, type="ping", payload=tock.PingPayload(url="https://example.com/health"), labels={"app": "quickstart"})
client.jobs.create(ping(name="hello", delay="1h"))  # retried safely: never two jobs
client.jobs.put("nightly", ping(name="nightly", schedule=tock.Schedule(cron="0 3 * * *")))  # upsert by key
for job in client.jobs.all(tock.JobFilter(labels={"app": "quickstart"})):
    print(job.name, job.status)
try:
    client.jobs.create(ping(name="bad", schedule=tock.Schedule(cron="61 * * * *")))
except tock.InvalidError as e:
    print(e.status, e.code, e.field)
