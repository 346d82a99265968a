"""The SQL of the health and transfer features: the audit's rows (audit) and export and
import's (transfer)."""
