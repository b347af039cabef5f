"""A real Django admin for Airlock's tests: Django from PyPI (pinned in the Makefile),
its own admin app unchanged, a superuser and a few users made here, served by Django's
own threaded development server (the server `runserver` uses) on a loopback port the
kernel picks. It prints `ready http://127.0.0.1:PORT` once it accepts connections.

Three routes are the test's, not the admin's: `/_test/users` (usernames, read by
Django's ORM from its own database), `/_test/requests` (every request the server
received, `METHOD path`), so a test asks Django itself what happened, and
`/_test/expire-sessions` (Django's own sessions deleted: every login ends, as when
they expire).

Usage: python site.py DIR ADMIN_PASSWORD
"""

import json
import sys
import threading

import django
from django.conf import settings

DIR, PASSWORD = sys.argv[1], sys.argv[2]

settings.configure(
    DEBUG=False,
    SECRET_KEY="airlock-test-only-" + "x" * 40,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "django.contrib.staticfiles",
    ],
    MIDDLEWARE=[
        __name__ + ".Seen",
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    TEMPLATES=[
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "APP_DIRS": True,
            "OPTIONS": {
                "context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                    "django.contrib.messages.context_processors.messages",
                ]
            },
        }
    ],
    DATABASES={
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DIR + "/db.sqlite3"}
    },
    STATIC_URL="/static/",
    USE_TZ=True,
    # Fast hashing: a test logs in many times (the hasher is not what is tested).
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
    LOGGING_CONFIG=None,
)
django.setup()

from django.contrib import admin  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

SEEN = []
SEEN_LOCK = threading.Lock()


class Seen:
    """Notes every request the server receives, before Django handles it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(("/_test/", "/static/")):
            with SEEN_LOCK:
                SEEN.append(request.method + " " + request.get_full_path())
        return self.get_response(request)


def users(_request):
    from django.contrib.auth.models import User

    return JsonResponse({"users": sorted(User.objects.values_list("username", flat=True))})


def requests(_request):
    with SEEN_LOCK:
        return JsonResponse({"requests": list(SEEN)})


def expire_sessions(_request):
    from django.contrib.sessions.models import Session

    deleted, _ = Session.objects.all().delete()
    return JsonResponse({"deleted": deleted})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("_test/users", users),
    path("_test/requests", requests),
    path("_test/expire-sessions", expire_sessions),
]


def main():
    from django.contrib.auth.models import User
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    call_command("migrate", verbosity=0, interactive=False)
    User.objects.create_superuser("admin", "admin@example.test", PASSWORD)
    for name, first in [
        ("carol", "Carol"),
        ("dave", "Dave"),
        ("erin", "Erin"),
        ("frank", "Frank"),
        ("grace", "Grace"),
        ("heidi", "Heidi"),
    ]:
        User.objects.create_user(name, name + "@example.test", "unused-" + name, first_name=first)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet, ipv6=False)
    server.set_app(StaticFilesHandler(WSGIHandler()))
    print("ready http://127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
