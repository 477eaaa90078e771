"""What a queue allows, for job and message queues alike: its payload type (typed), its length
bound (bounds), its flow limits (flow: rate and running limits), and its settings as an operator
reads them (settings)."""
