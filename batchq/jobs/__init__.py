"""The job queue: how a job is built (jobspec) and which task it names (tasks); how a task is
called (calls, hooks, timeouts, heartbeat, children) and what it reports (reporting, control);
what a job leaves (results, history); its parents (dependencies); its producers beside enqueue
(oncommit, schedules and their cron expressions). batchq.queue.Queue is the front door to it."""
