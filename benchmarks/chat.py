"""Deterministic synthetic chat: turns and questions built from word lists, no downloads."""
from __future__ import annotations

import random

NAMES = """Alice Bruno Chen Dana Emeka Farah Gustav Hana Ines Jonas Kavya Liam Mei Nadia Omar
Priya Quentin Rosa Sven Tariq Uma Viktor Wen Ximena Yusuf Zoe Amara Bilal Clara Dmitri Elif
Felix Greta Hugo Isla Javier Keiko Lena Mateo Noor Oskar Paloma Rafael Sakura Tomas Valentina
Wilhelmina Yara Zeynep Anton Beatriz Cyrus Delphine Esteban Freya Goran Hiroshi""".split()
PLACES = """Lisbon Kyoto Nairobi Oslo Marrakesh Vancouver Hanoi Valparaiso Tbilisi Reykjavik
Cartagena Ljubljana Porto Seville Bergen Krakow Tallinn Istanbul Montreal Melbourne Queenstown
Cusco Zanzibar Edinburgh Dubrovnik Salzburg Bruges Granada Naples Bologna Antwerp Gdansk
Chiang-Mai Penang Hobart Halifax Asheville Boulder Sapporo Busan Taipei Jaipur Goa Kotor
Lucerne Innsbruck Tromso Galway Cork Oaxaca""".split()
HOBBIES = ["bouldering", "pottery", "sourdough baking", "birdwatching", "sea kayaking",
           "trail running", "chess", "woodworking", "watercolour painting", "salsa dancing",
           "beekeeping", "astrophotography", "film photography", "gardening", "knitting",
           "origami", "calligraphy", "surfing", "mountain biking", "cross-country skiing",
           "fly fishing", "scuba diving", "jazz piano", "bass guitar", "choir singing",
           "board games", "fermenting kimchi", "restoring bicycles", "bonsai", "archery",
           "fencing", "sailing", "stand-up comedy", "crossword puzzles"]
ACTIVITIES = ["hiking", "kayaking", "cycling", "swimming", "skiing", "camping", "climbing",
              "running", "sailing", "snorkelling", "fishing", "stargazing"]
FOODS = """ramen paella pierogi bibimbap tagine ceviche pho dumplings falafel moussaka risotto
laksa empanadas goulash shakshuka sushi tacos biryani khachapuri pavlova baklava churros
gnocchi pad-thai arepas jollof fondue borscht okonomiyaki poutine""".split()
JOBS = ["nurse", "architect", "plumber", "data analyst", "teacher", "pilot", "veterinarian",
            "electrician", "translator", "journalist", "pharmacist", "carpenter", "chef",
            "librarian", "geologist", "physiotherapist", "software engineer", "marine biologist",
            "accountant", "firefighter"]
RELATIONS = ["sister", "brother", "cousin", "neighbour", "colleague", "friend", "aunt", "uncle",
             "flatmate", "mother", "father", "partner", "boss", "nephew", "niece"]
PETS = ["cat", "dog", "parrot", "rabbit", "tortoise", "hamster", "goldfish", "ferret", "gecko"]
PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Ziggy", "Noodle", "Captain", "Olive", "Pickles",
             "Luna", "Waffles", "Basil", "Tofu", "Juniper", "Pistachio"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ADJECTIVES = ["amazing", "exhausting", "peaceful", "chaotic", "unforgettable", "rainy",
              "surprisingly cheap", "crowded", "delicious", "freezing", "relaxing", "stressful"]

USER = [
    "I went {activity} with {name} near {place} last {day}, and the weather was {adj}.",
    "My {relation} {name} just started a new job as a {job} in {place}.",
    "Can you help me plan a {n}-day trip to {place}? I want to try {food} and go {activity}.",
    "I've been getting into {hobby} lately; {name} got me started on it in {month}.",
    "Please remember that {name}'s birthday is on {month} {date}. They love {food}.",
    "We adopted a {pet} called {petname} and it already chews everything in sight.",
    "I'm thinking about quitting my job to become a {job}. Is that crazy at my age?",
    "The {food} place near my flat closed down, which is sad because {name} and I went every {day}.",
    "I spent {n} hours on {hobby} this weekend and my hands are sore.",
    "Do you think {place} or {place2} is better for {activity} in {month}?",
    "My {relation} keeps asking me to join their {hobby} club on {day} evenings.",
    "I'm allergic to {food2}, so I skip it whenever {name} cooks.",
]
ASSISTANT = [
    "That sounds {adj}! How did {name} find it?",
    "Congratulations to {name}! Being a {job} in {place} must be quite an adventure.",
    "For {n} days in {place} I'd split the time between the old town, a day of {activity} and "
    "an evening hunting for the best {food}.",
    "Taking up {hobby} is a lovely idea. Do you want a few beginner tips?",
    "Noted: {name}'s birthday is {month} {date} and they love {food}.",
    "{petname} is a great name for a {pet}! Chew toys and a routine usually help.",
    "It's never too late. Plenty of people retrain as a {job}; want to look at courses?",
    "I'm sorry to hear that. Maybe you and {name} could try a new {food} spot together.",
    "{n} hours is a lot! Stretching before {hobby} can really help with soreness.",
    "In {month}, {place} is usually better for {activity}; {place2} can be {adj} then.",
]
QUESTIONS = [
    "What do you know about {name}?",
    "When is {name}'s birthday?",
    "What did I tell you about {place}?",
    "Which hobbies have I mentioned, like {hobby}?",
    "What is my {pet} called?",
    "What does my {relation} do for work?",
    "Where did I go {activity}?",
    "Have I said anything about {food}?",
    "Who got me into {hobby}?",
    "What trip was I planning for {month}?",
]


class Chat:
    """A seeded generator of chat turns (user, assistant) and recall questions."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)

    def _slots(self) -> dict:
        pick = self.rng.choice
        return {"name": pick(NAMES), "place": pick(PLACES), "place2": pick(PLACES),
                "hobby": pick(HOBBIES), "activity": pick(ACTIVITIES), "food": pick(FOODS),
                "food2": pick(FOODS), "job": pick(JOBS), "relation": pick(RELATIONS),
                "pet": pick(PETS), "petname": pick(PET_NAMES), "month": pick(MONTHS),
                "day": pick(DAYS), "adj": pick(ADJECTIVES), "n": self.rng.randint(2, 14),
                "date": self.rng.randint(1, 28)}

    def _say(self, templates: list[str], sentences: int) -> str:
        return " ".join(self.rng.choice(templates).format(**self._slots()) for _ in range(sentences))

    def turn(self) -> tuple[str, str]:
        """One (user, assistant) pair of one to four sentences each."""
        return (self._say(USER, self.rng.choice((1, 1, 1, 2, 2, 3))),
                self._say(ASSISTANT, self.rng.choice((1, 1, 2, 2, 3, 4))))

    def question(self) -> str:
        return self._say(QUESTIONS, 1)
