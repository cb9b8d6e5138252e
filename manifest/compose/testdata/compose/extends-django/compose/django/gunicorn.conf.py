# Gunicorn settings for the web process.
bind = "0.0.0.0:8000"
workers = 3
timeout = 60
accesslog = "-"
