"""The raw material of `regdesk demo`: names, places and phone ranges, as plain constants.

Names come from many cultures and keep their own spelling (José, Søren, Łukasz, Nguyễn,
Kaʻiulani). A family name written "Kowalski|Kowalska" has a masculine and a feminine form.

Places carry a postcode pattern ('#' a digit, '@' a letter) and a phone pattern: a fixed
prefix followed by '#' digits, in E.164. Where a country reserves numbers for fiction the
pattern stays inside them (US/CA 555-01XX, UK 07700 900XXX, AU 0491 570XXX, FR 06 39 98);
elsewhere it is a mobile range of the right length, which is what `normalize_phone` checks.
"""

from __future__ import annotations

from dataclasses import dataclass

# fmt: off
# (The tables below keep many short names to a line; the formatter would put one per line.)


@dataclass(frozen=True)
class Culture:
    name: str
    weight: int  # share among people whose names come from the worldwide mix
    homes: tuple[str, ...]  # countries (alpha-2) where these names are the local ones
    given_f: tuple[str, ...]
    given_m: tuple[str, ...]
    family: tuple[str, ...]
    double_family: float = 0.0  # share with two family names ("Hernández López")
    nicknames: tuple[tuple[str, str], ...] = ()  # given name -> what friends call them
    adopted: tuple[str, ...] = ()  # names people pick for themselves abroad (Kevin, Grace)


@dataclass(frozen=True)
class Place:
    city: str
    state: str
    postcode: str
    phone: str
    streets: tuple[str, ...] = ()  # overrides the country's streets (e.g. Tokyo districts)


@dataclass(frozen=True)
class Country:
    code: str
    weight: int  # share of attendees living there
    local_share: float  # share of residents whose names come from the local cultures
    line1: str  # "{n}" house number, "{street}"; "{a}-{b}-{c}" for Japanese block numbers
    max_house: int
    streets: tuple[str, ...]
    units: tuple[str, ...]  # addressLine2 forms: "{n}" a number, "{L}" a letter
    places: tuple[Place, ...]


POSTCODE_LETTERS = "ABEGHJLNPRSTWXYZ"  # valid in both Canadian and British postcodes

# --- names ---------------------------------------------------------------------------------

ENGLISH_F = (
    "Emily", "Olivia", "Zoë", "Hannah", "Madison", "Abigail", "Chloe", "Grace", "Katherine",
    "Jennifer", "Samantha", "Elizabeth", "Margaret", "Ashley", "Brianna", "Taylor", "Riley",
    "Morgan", "Charlotte", "Amelia", "Rebecca", "Lauren", "Megan", "Heather",
)
ENGLISH_M = (
    "James", "Michael", "William", "Christopher", "Benjamin", "Alexander", "Nicholas", "Tyler",
    "Ethan", "Daniel", "Matthew", "Andrew", "Jordan", "Riley", "Taylor", "Cameron", "Dakota",
    "Jesse", "Oliver", "Harry", "Thomas", "Liam", "Noah", "Samuel",
)

CULTURES: tuple[Culture, ...] = (
    Culture(
        "english", 30, ("US", "CA", "GB", "AU", "NZ", "IE"),
        ENGLISH_F, ENGLISH_M,
        (
            "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson",
            "Anderson", "Taylor", "Thomas", "Moore", "Jackson", "Martin", "Thompson", "White",
            "Harris", "Clark", "Lewis", "Walker", "Hall", "Young", "Allen", "King", "Wright",
            "Scott", "Green", "Baker", "Adams", "Nelson", "Hill", "Campbell", "Mitchell",
            "Roberts", "Carter", "Phillips", "Evans", "Turner", "Parker", "Collins", "Edwards",
            "Stewart", "Morris", "Cook", "Rogers", "Reed", "Bennett", "Fairweather",
        ),
        nicknames=(
            ("Alexander", "Alex"), ("Katherine", "Kate"), ("William", "Will"),
            ("Elizabeth", "Liz"), ("Christopher", "Chris"), ("Jennifer", "Jen"),
            ("Benjamin", "Ben"), ("Samantha", "Sam"), ("Nicholas", "Nick"),
            ("Margaret", "Maggie"), ("Matthew", "Matt"), ("Rebecca", "Becca"),
        ),
    ),
    Culture(
        "african_american", 8, ("US",),
        ("Aaliyah", "Imani", "Keisha", "Jasmine", "Destiny", "Ebony", "Nia", "Tiana", "Shanice",
         "Kiara", "Monique", "Layla"),
        ("DeShawn", "Jamal", "Malik", "Darius", "Terrence", "Andre", "Marcus", "Jaylen",
         "Isaiah", "Xavier", "Tyrone", "Cedric"),
        ("Washington", "Jefferson", "Robinson", "Banks", "Freeman", "Jenkins", "Booker",
         "Coleman", "Brooks", "Mosley", "Gaines", "Dorsey", "Holloway", "Pryor"),
        nicknames=(("Terrence", "Terry"), ("Monique", "Mo"), ("Marcus", "Marc")),
    ),
    Culture(
        "japanese", 6, ("JP",),
        ("Yui", "Haruka", "Aoi", "Sakura", "Misaki", "Yuna", "Rin", "Hina", "Mei", "Nanami",
         "Ayaka", "Kaori", "Yōko", "Emi", "Chihiro", "Akane"),
        ("Haruto", "Sota", "Ren", "Yuto", "Takumi", "Kenji", "Hiroshi", "Daiki", "Shōta",
         "Ryūsei", "Kazuki", "Takeshi", "Akira", "Yūki"),
        ("Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito", "Yamamoto", "Nakamura",
         "Kobayashi", "Kato", "Yoshida", "Yamada", "Sasaki", "Matsumoto", "Inoue", "Kimura",
         "Saitō", "Ōno", "Hayashi", "Shimizu"),
    ),
    Culture(
        "chinese", 6, (),
        ("Mei", "Xiaoyu", "Jing", "Lina", "Yan", "Xinyi", "Hui", "Ying", "Wen", "Qian", "Yuxin",
         "Shu", "Xiu Ying", "Mei Ling"),
        ("Wei", "Hao", "Jun", "Lei", "Jian", "Ming", "Yang", "Zhiwei", "Haoran", "Yichen", "Bo",
         "Tao", "Zihan", "Kai"),
        ("Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao", "Wu", "Zhou", "Xu",
         "Sun", "Ma", "Zhu", "Hu", "Guo", "Lin", "He", "Gao", "Luo", "Chan", "Wong", "Leung",
         "Cheung", "Tsai", "Hsu"),
        adopted=("Kevin", "Grace", "Vivian", "Eric", "Jenny", "Tony", "Michelle", "Jason",
                 "Cindy", "Andy", "Emily", "Jack"),
    ),
    Culture(
        "korean", 4, ("KR",),
        ("Ji-woo", "Seo-yeon", "Min-seo", "Ha-eun", "Soo-ah", "Yuna", "Ji-yeon", "Eun-ji",
         "Da-eun", "Hye-jin"),
        ("Min-jun", "Seo-jun", "Do-yun", "Ji-ho", "Jae-won", "Hyun-woo", "Sung-min",
         "Dong-hyun", "Tae-yang", "Jun-ho"),
        ("Kim", "Lee", "Park", "Choi", "Jung", "Kang", "Cho", "Yoon", "Jang", "Lim", "Han", "Oh",
         "Seo", "Shin", "Kwon", "Hwang"),
        adopted=("Daniel", "Grace", "Sarah", "David", "Joy", "Brian", "Esther", "Paul"),
    ),
    Culture(
        "vietnamese", 4, (),
        ("Linh", "Anh", "Thảo", "Hương", "Ngọc", "Trang", "Mai", "Hạnh", "Phương", "Thu"),
        ("Minh", "Huy", "Dũng", "Tuấn", "Khoa", "Quang", "Đức", "Bảo", "Long", "Phúc"),
        ("Nguyễn", "Trần", "Lê", "Phạm", "Hoàng", "Huỳnh", "Phan", "Vũ", "Võ", "Đặng", "Bùi",
         "Đỗ", "Hồ", "Ngô", "Dương", "Lý"),
        adopted=("Tina", "Kevin", "Vivian", "Peter", "Lily", "Tommy", "Annie", "Henry"),
    ),
    Culture(
        "indian", 5, ("IN",),
        ("Priya", "Ananya", "Aishwarya", "Divya", "Kavya", "Lakshmi", "Meera", "Neha", "Pooja",
         "Shreya", "Sunita", "Deepika", "Harpreet"),
        ("Arjun", "Rahul", "Vikram", "Aditya", "Rohan", "Sanjay", "Karthik", "Arun",
         "Siddharth", "Amit", "Venkatesh", "Harpreet"),
        ("Sharma", "Patel", "Singh|Kaur", "Kumar", "Reddy", "Iyer", "Nair", "Gupta", "Das",
         "Chatterjee", "Menon", "Rao", "Joshi", "Mehta", "Pillai", "Banerjee", "Krishnan",
         "Desai"),
        nicknames=(("Siddharth", "Sid"), ("Venkatesh", "Venky"), ("Aishwarya", "Ash")),
    ),
    Culture(
        "nigerian", 4, ("NG",),
        ("Ngozi", "Adaeze", "Folake", "Fọláké", "Chiamaka", "Ifeoma", "Aisha", "Zainab",
         "Temitope", "Funmilayo", "Yetunde", "Amaka"),
        ("Chinedu", "Oluwaseun", "Emeka", "Tunde", "Babajide", "Musa", "Obinna", "Chidi",
         "Ikenna", "Olúwadámilárè", "Uchenna", "Abubakar"),
        ("Okafor", "Adeyemi", "Okonkwo", "Balogun", "Eze", "Nwosu", "Bello", "Adébáyọ̀",
         "Adebayo", "Ogunleye", "Okoro", "Chukwu", "Ibrahim", "Oyelaran", "Nnamdi", "Olawale"),
        nicknames=(("Oluwaseun", "Seun"), ("Babajide", "Jide"), ("Temitope", "Tope"),
                   ("Olúwadámilárè", "Dami"), ("Chiamaka", "Amaka")),
    ),
    Culture(
        "ghanaian", 2, (),
        ("Ama", "Akosua", "Abena", "Efua", "Adwoa", "Esi", "Afua", "Yaa", "Akua", "Nana"),
        ("Kwame", "Kofi", "Yaw", "Kwabena", "Kojo", "Kwesi", "Kwaku", "Kwadwo", "Nana", "Fiifi"),
        ("Mensah", "Owusu", "Asante", "Boateng", "Osei", "Agyeman", "Appiah", "Adjei", "Ofori",
         "Amoah", "Darko", "Acheampong", "Antwi", "Quaye"),
    ),
    Culture(
        "ethiopian", 2, (),
        ("Selam", "Tigist", "Meron", "Hana", "Mekdes", "Tsion", "Kidist", "Liya", "Eyerusalem",
         "Samrawit"),
        ("Abebe", "Dawit", "Yonas", "Bereket", "Haile", "Tewodros", "Henok", "Kaleb", "Mesfin",
         "Solomon"),
        ("Tesfaye", "Bekele", "Girma", "Alemu", "Haile", "Kebede", "Tadesse", "Mengistu",
         "Wolde", "Assefa", "Gebremedhin", "Desta"),
    ),
    Culture(
        "arabic", 4, (),
        ("Fatima", "Layla", "Yasmin", "Noor", "Mariam", "Amira", "Salma", "Huda", "Rania",
         "Leila", "Dalia", "Hala"),
        ("Mohammed", "Ahmed", "Omar", "Khalid", "Hassan", "Youssef", "Karim", "Tariq", "Ali",
         "Samir", "Ziad", "Rami"),
        ("Al-Sayed", "Haddad", "Khalil", "Mansour", "Nasser", "Hamdan", "Abboud", "El-Amin",
         "Farouk", "Saleh", "Aziz", "Qasim", "Darwish", "Hijazi", "Bitar", "Al-Masri"),
    ),
    Culture(
        "turkish", 2, ("TR",),
        ("Ayşe", "Elif", "Zeynep", "Özge", "Şebnem", "İrem", "Deniz", "Ebru", "Tuğba", "Selin"),
        ("Mehmet", "Mustafa", "Emre", "Burak", "Can", "Gökhan", "Deniz", "Cem", "Oğuz", "Barış"),
        ("Yılmaz", "Kaya", "Demir", "Şahin", "Çelik", "Yıldız", "Aydın", "Öztürk", "Arslan",
         "Doğan", "Kılıç", "Aslan", "Çetin", "Koç", "Kurt", "Özdemir"),
    ),
    Culture(
        "persian", 2, (),
        ("Shirin", "Parisa", "Nasrin", "Golnar", "Maryam", "Leila", "Roya", "Setareh", "Azadeh",
         "Niloufar"),
        ("Dariush", "Arash", "Kaveh", "Reza", "Babak", "Farhad", "Kourosh", "Navid", "Omid",
         "Siavash"),
        ("Hosseini", "Tehrani", "Rahimi", "Karimi", "Moradi", "Jafari", "Ahmadi", "Rostami",
         "Sadeghi", "Farahani", "Ebrahimi", "Ghorbani", "Shirazi", "Najafi", "Mirzaei"),
    ),
    Culture(
        "russian", 3, (),
        ("Ekaterina", "Anastasia", "Olga", "Natalia", "Yulia", "Svetlana", "Tatiana", "Daria",
         "Ksenia", "Irina"),
        ("Aleksandr", "Dmitri", "Mikhail", "Ivan", "Sergei", "Pavel", "Nikolai", "Artyom",
         "Yevgeny", "Andrei"),
        ("Ivanov|Ivanova", "Smirnov|Smirnova", "Kuznetsov|Kuznetsova", "Popov|Popova",
         "Sokolov|Sokolova", "Lebedev|Lebedeva", "Kozlov|Kozlova", "Novikov|Novikova",
         "Morozov|Morozova", "Volkov|Volkova", "Orlov|Orlova", "Belyaev|Belyaeva"),
        nicknames=(("Aleksandr", "Sasha"), ("Ekaterina", "Katya"), ("Dmitri", "Dima"),
                   ("Mikhail", "Misha"), ("Natalia", "Natasha"), ("Yevgeny", "Zhenya")),
    ),
    Culture(
        "polish", 2, ("PL",),
        ("Katarzyna", "Małgorzata", "Agnieszka", "Zofia", "Joanna", "Magdalena", "Ewa",
         "Aleksandra", "Weronika", "Natalia"),
        ("Łukasz", "Piotr", "Krzysztof", "Paweł", "Tomasz", "Michał", "Jakub", "Wojciech",
         "Grzegorz", "Marek"),
        ("Kowalski|Kowalska", "Nowak", "Wiśniewski|Wiśniewska", "Wójcik",
         "Lewandowski|Lewandowska", "Zieliński|Zielińska", "Szymański|Szymańska", "Woźniak",
         "Dąbrowski|Dąbrowska", "Kozłowski|Kozłowska", "Mazur", "Krawczyk",
         "Jankowski|Jankowska", "Grabowski|Grabowska", "Król"),
        nicknames=(("Katarzyna", "Kasia"), ("Małgorzata", "Gosia"), ("Aleksandra", "Ola"),
                   ("Wojciech", "Wojtek"), ("Grzegorz", "Grzesiek")),
    ),
    Culture(
        "finnish", 1, ("FI",),
        ("Aino", "Helmi", "Siiri", "Venla", "Eveliina", "Johanna", "Päivi", "Sanna", "Kaisa",
         "Tuula"),
        ("Juhani", "Mikko", "Jari", "Timo", "Väinö", "Eero", "Antti", "Ville", "Petteri",
         "Olli"),
        ("Korhonen", "Virtanen", "Mäkinen", "Nieminen", "Mäkelä", "Hämäläinen", "Laine",
         "Heikkinen", "Koskinen", "Järvinen", "Lehtonen", "Saarinen"),
    ),
    Culture(
        "nordic", 2, ("SE",),
        ("Astrid", "Freja", "Sigrid", "Åsa", "Ingrid", "Linnéa", "Maja", "Elin", "Ebba",
         "Signe"),
        ("Søren", "Bjørn", "Mads", "Magnus", "Björn", "Anders", "Erik", "Oskar", "Lars",
         "Håkan"),
        ("Sørensen", "Jørgensen", "Lindqvist", "Åberg", "Østergaard", "Nyström", "Halvorsen",
         "Berg", "Dahl", "Holm", "Lindgren", "Sjöberg"),
    ),
    Culture(
        "irish", 3, ("IE",),
        ("Aoife", "Siobhán", "Niamh", "Saoirse", "Caoimhe", "Róisín", "Orla", "Gráinne",
         "Clodagh", "Aisling"),
        ("Seán", "Cillian", "Pádraig", "Eoin", "Oisín", "Ciarán", "Darragh", "Colm", "Tadhg",
         "Ruairí"),
        ("O'Brien", "Murphy", "Kelly", "O'Sullivan", "Walsh", "Byrne", "Ó Súilleabháin",
         "McCarthy", "Doyle", "Gallagher", "Mac Cárthaigh", "Fitzgerald", "Ó Briain"),
        nicknames=(("Pádraig", "Paddy"), ("Siobhán", "Shiv")),
    ),
    Culture(
        "german", 4, ("DE",),
        ("Anna", "Lena", "Sophie", "Johanna", "Katharina", "Lea", "Jana", "Julia", "Greta",
         "Marlene"),
        ("Lukas", "Jonas", "Maximilian", "Felix", "Leon", "Paul", "Tobias", "Jürgen", "Florian",
         "Matthias"),
        ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker",
         "Schulz", "Hoffmann", "Schäfer", "Koch", "Bauer", "Richter", "Klein", "Wolf",
         "Schröder", "Neumann", "Schwarz", "Zimmermann", "Krüger", "Groß"),
        nicknames=(("Maximilian", "Max"), ("Katharina", "Kathi"), ("Matthias", "Matze")),
    ),
    Culture(
        "french", 3, ("FR",),
        ("Chloé", "Camille", "Léa", "Manon", "Inès", "Élodie", "Margaux", "Juliette", "Océane",
         "Amélie"),
        ("Théo", "Lucas", "Hugo", "Louis", "Mathéo", "Jérôme", "François", "Étienne", "Gaël",
         "Noël"),
        ("Martin", "Bernard", "Dubois", "Thomas", "Robert", "Richard", "Petit", "Durand",
         "Lefèvre", "Moreau", "Girard", "Lefebvre", "Rousseau", "Fournier", "Lambert", "Bonnet",
         "Faure", "Mercier"),
    ),
    Culture(
        "spanish", 2, ("ES",),
        ("María", "Lucía", "Paula", "Carmen", "Sofía", "Marta", "Alba", "Elena", "Nerea",
         "Inés"),
        ("José", "Javier", "Alejandro", "Pablo", "Álvaro", "Sergio", "Adrián", "Iñaki", "Jesús",
         "Ángel"),
        ("García", "Fernández", "González", "Rodríguez", "López", "Martínez", "Sánchez", "Pérez",
         "Gómez", "Jiménez", "Ruiz", "Hernández", "Díaz", "Moreno", "Muñoz", "Álvarez",
         "Romero", "Ibáñez"),
        double_family=0.4,
        nicknames=(("José", "Pepe"), ("Francisco", "Paco"), ("Alejandro", "Álex")),
    ),
    Culture(
        "mexican", 8, ("MX", "US"),
        ("Guadalupe", "Ximena", "Valeria", "Fernanda", "Daniela", "Itzel", "Citlali", "Mariana",
         "Renata", "Xóchitl"),
        ("José Luis", "Juan Carlos", "Diego", "Emiliano", "Santiago", "Luis", "Cuauhtémoc",
         "Alejandro", "Eduardo", "Rodrigo"),
        ("Hernández", "García", "Martínez", "López", "González", "Pérez", "Rodríguez",
         "Sánchez", "Ramírez", "Cruz", "Flores", "Gómez", "Morales", "Vázquez", "Reyes",
         "Jiménez", "Torres", "Díaz", "Gutiérrez", "Mendoza"),
        double_family=0.35,
        nicknames=(("Guadalupe", "Lupita"), ("José Luis", "Pepe"), ("Eduardo", "Lalo")),
    ),
    Culture(
        "brazilian", 3, ("BR",),
        ("Ana", "Beatriz", "Júlia", "Larissa", "Camila", "Letícia", "Gabriela", "Fernanda",
         "Thaís", "Luíza"),
        ("João", "Gabriel", "Lucas", "Matheus", "Rafael", "Thiago", "Vinícius", "Guilherme",
         "Felipe", "André"),
        ("Silva", "da Silva", "dos Santos", "Oliveira", "Souza", "Rodrigues", "Ferreira",
         "Alves", "Pereira", "Lima", "Gomes", "Costa", "Ribeiro", "Martins", "Carvalho",
         "Araújo", "Conceição"),
        double_family=0.3,
    ),
    Culture(
        "filipino", 4, ("PH",),
        ("Maria Clara", "Angelica", "Kristine", "Jasmine", "Mae", "Princess", "Rowena",
         "Mylene", "Jhoanna", "Liezel"),
        ("Mark Anthony", "John Paul", "Rommel", "Jericho", "Paolo", "Miguel", "Ramon", "Angelo",
         "Christian", "Jomar"),
        ("Santos", "Reyes", "Cruz", "Bautista", "Ocampo", "Garcia", "Mendoza", "Dela Cruz",
         "Villanueva", "Aquino", "Ramos", "Castillo", "Manalo", "Macapagal", "Dimaculangan",
         "Pangilinan"),
        nicknames=(("Mark Anthony", "Mac-Mac"), ("John Paul", "JP"), ("Maria Clara", "Clang")),
    ),
    Culture(
        "hawaiian", 1, ("US",),
        ("Leilani", "Noelani", "Kailani", "Malia", "Iolana", "Kaʻiulani", "Lokelani", "Makana",
         "Nohea", "Alana"),
        ("Keanu", "Kalani", "Makoa", "Kai", "Kekoa", "Ikaika", "Koa", "Nāinoa", "Kainoa",
         "Keola"),
        ("Kealoha", "Kahananui", "Kamakau", "Akana", "Kahale", "Kamaka", "Keawe", "Kanahele",
         "Kapule", "Nakoa", "Kaleikini", "Makekau"),
    ),
    Culture(
        "navajo", 1, ("US",),
        ("Shandiin", "Dezbah", "Autumn", "Naomi", "Tiana", "Kayla", "Loretta", "Marlene",
         "Nizhoni", "Sarah"),
        ("Ahiga", "Darrell", "Kee", "Leonard", "Tyler", "Wilson", "Jonah", "Marvin", "Raymond",
         "Harrison"),
        ("Begay", "Yazzie", "Tsosie", "Benally", "Nez", "Begaye", "Etsitty", "Tsinajinnie",
         "Manygoats", "Bitsui", "Chee", "Yellowhair", "Todacheene", "Largo", "Bahe"),
    ),
    Culture(
        "maori", 1, ("NZ",),
        ("Aroha", "Mere", "Anahera", "Kahurangi", "Ngaio", "Hine", "Moana", "Tūī", "Ataahua",
         "Kiri"),
        ("Wiremu", "Tāne", "Rāwiri", "Hēmi", "Nikau", "Manaia", "Tamati", "Ihaia", "Rangi",
         "Tama"),
        ("Ngata", "Parata", "Te Whare", "Waititi", "Henare", "Pōmare", "Kingi", "Tawhiri",
         "Horomona", "Ruatapu", "Te Kanawa", "Ngāwati"),
    ),
    Culture(
        "greek", 2, ("GR",),
        ("Eleni", "Maria", "Katerina", "Sofia", "Dimitra", "Ioanna", "Zoë", "Georgia",
         "Anastasia", "Vasiliki"),
        ("Giorgos", "Dimitris", "Nikos", "Kostas", "Yannis", "Panagiotis", "Christos",
         "Vasilis", "Thanasis", "Stavros"),
        ("Papadopoulos|Papadopoulou", "Nikolaidis|Nikolaidou", "Georgiou", "Dimitriou",
         "Papadakis", "Vlachos|Vlachou", "Antoniou", "Konstantinidis|Konstantinidou",
         "Karagiannis|Karagianni", "Oikonomou", "Makris|Makri", "Pappas|Pappa"),
    ),
    Culture(
        "italian", 2, (),
        ("Giulia", "Chiara", "Francesca", "Alessia", "Martina", "Federica", "Giorgia", "Ilaria",
         "Beatrice", "Noemi"),
        ("Luca", "Marco", "Matteo", "Lorenzo", "Alessandro", "Davide", "Niccolò", "Gianluca",
         "Andrea", "Simone"),
        ("Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci",
         "Marino", "Greco", "Bruno", "Gallo", "Conti", "De Luca", "Mancini", "Lombardi",
         "Moretti", "D'Angelo"),
    ),
)

# Names fans go by (preferredName), and the words of their handles.
FAN_NAMES = (
    "Fae", "Kit", "Ash", "Sunny", "Moth", "Pixel", "Rook", "Juniper", "Vix", "Bear", "Tanuki",
    "Kitsune", "Spark", "Echo", "Wren", "Nova", "Jinx", "Sage", "Onyx", "Ember", "Scout",
    "Biscuit", "Noodle", "Maple", "Rune", "Quill", "Cosmo", "Saffron", "Tetsu", "Mochi",
    "Pip", "Blue", "Sparrow", "Zephyr", "Lumen", "Kestrel", "Marble", "Clover", "Dash",
    "Flint", "Hex", "Indigo", "Jules", "Koi", "Lark", "Mika", "Nyx", "Orbit", "Pan", "Raven",
    "Sora", "Tofu", "Umbra", "Vesper", "Wisp", "Yuzu", "Ziggy", "Captain Kit", "Doc Ock",
    "Sir Reginald", "Big Mike", "Lady Ash", "DJ Moth", "Professor Plum",
)
HANDLE_WORDS = (
    "quiet", "sleepy", "lucky", "cosmic", "neon", "tiny", "grumpy", "velvet", "silver",
    "crimson", "electric", "midnight", "rusty", "stormy", "fuzzy", "sneaky", "golden", "feral",
    "lunar", "solar", "pocket", "paper", "retro", "hyper", "mellow", "spooky", "wandering",
    "caffeinated", "glitter", "arcane",
)
HANDLE_CREATURES = (
    "fox", "otter", "kitsune", "tanuki", "dragon", "wyvern", "gryphon", "raccoon", "moth",
    "axolotl", "corvid", "raven", "wolf", "lynx", "possum", "badger", "hare", "fennec", "owl",
    "kirin", "phoenix", "kraken", "selkie", "gecko", "capybara", "redpanda", "mecha", "ronin",
    "bard", "paladin", "rogue", "wizard", "cleric", "golem", "slime", "yokai",
)

EMAIL_DOMAINS = ("example.com", "example.org", "example.net", "mail.example")
EMAIL_DOMAIN_WEIGHTS = (35, 25, 20, 20)

# Letters that do not come apart under Unicode decomposition, and their ASCII spelling.
ASCII_LETTERS = {
    "Ł": "L", "ł": "l", "Ø": "O", "ø": "o", "Đ": "D", "đ": "d", "ß": "ss", "Æ": "AE",
    "æ": "ae", "Œ": "OE", "œ": "oe", "Þ": "Th", "þ": "th", "ı": "i", "Ð": "D", "ð": "d",
}

# --- places --------------------------------------------------------------------------------

US_STREETS = (
    "Main St", "Maple Ave", "Oak St", "Cedar Ln", "Elm St", "Pine St", "Washington Ave",
    "Lake Dr", "Hillcrest Rd", "Sunset Blvd", "Park Ave", "Mill Rd", "Willow Way",
    "Highland Ave", "River Rd", "Juniper Ct", "Aspen Dr", "Canyon View Dr", "Mesa Verde Ln",
    "Magnolia St", "Chestnut St", "Prospect Ave", "Orchard Ln", "Summit Ave",
)


def _us(city: str, state: str, zip3: str, area: str) -> Place:
    return Place(city, state, f"{zip3}##", f"+1{area}55501##")


def _ca(city: str, province: str, fsa: str, area: str) -> Place:
    return Place(city, province, f"{fsa} #@#", f"+1{area}55501##")


COUNTRIES: tuple[Country, ...] = (
    Country(
        "US", 50, 0.55, "{n} {street}", 9999, US_STREETS,
        ("Apt {n}", "Apt {n}{L}", "Unit {n}", "Suite {n}00", "#{n}", "PO Box {n}{n}"),
        (
            _us("Reno", "NV", "895", "775"), _us("Las Vegas", "NV", "891", "702"),
            _us("San Francisco", "CA", "941", "415"), _us("Los Angeles", "CA", "900", "213"),
            _us("San Diego", "CA", "921", "619"), _us("Sacramento", "CA", "958", "916"),
            _us("Oakland", "CA", "946", "510"), _us("San Jose", "CA", "951", "408"),
            _us("Portland", "OR", "972", "503"), _us("Seattle", "WA", "981", "206"),
            _us("Spokane", "WA", "992", "509"), _us("Boise", "ID", "837", "208"),
            _us("Salt Lake City", "UT", "841", "801"), _us("Phoenix", "AZ", "850", "602"),
            _us("Tucson", "AZ", "857", "520"), _us("Flagstaff", "AZ", "860", "928"),
            _us("Albuquerque", "NM", "871", "505"), _us("Gallup", "NM", "873", "505"),
            _us("Denver", "CO", "802", "303"), _us("Austin", "TX", "787", "512"),
            _us("Houston", "TX", "770", "713"), _us("Dallas", "TX", "752", "214"),
            _us("San Antonio", "TX", "782", "210"), _us("Chicago", "IL", "606", "312"),
            _us("Minneapolis", "MN", "554", "612"), _us("Milwaukee", "WI", "532", "414"),
            _us("Detroit", "MI", "482", "313"), _us("Columbus", "OH", "432", "614"),
            _us("Pittsburgh", "PA", "152", "412"), _us("Philadelphia", "PA", "191", "215"),
            _us("New York", "NY", "100", "212"), _us("Brooklyn", "NY", "112", "718"),
            _us("Buffalo", "NY", "142", "716"), _us("Boston", "MA", "021", "617"),
            _us("Providence", "RI", "029", "401"), _us("Hartford", "CT", "061", "860"),
            _us("Baltimore", "MD", "212", "410"), _us("Washington", "DC", "200", "202"),
            _us("Richmond", "VA", "232", "804"), _us("Raleigh", "NC", "276", "919"),
            _us("Atlanta", "GA", "303", "404"), _us("Orlando", "FL", "328", "407"),
            _us("Miami", "FL", "331", "305"), _us("Nashville", "TN", "372", "615"),
            _us("New Orleans", "LA", "701", "504"), _us("Kansas City", "MO", "641", "816"),
            _us("St. Louis", "MO", "631", "314"), _us("Honolulu", "HI", "968", "808"),
            _us("Hilo", "HI", "967", "808"), _us("Anchorage", "AK", "995", "907"),
            _us("Omaha", "NE", "681", "402"), _us("Indianapolis", "IN", "462", "317"),
            _us("Louisville", "KY", "402", "502"), _us("Madison", "WI", "537", "608"),
        ),
    ),
    Country(
        "CA", 9, 0.55, "{n} {street}", 9999,
        ("Queen St W", "King St E", "Yonge St", "Rue Saint-Denis", "Rue Sainte-Catherine",
         "Granville St", "Jasper Ave", "Portage Ave", "Barrington St", "Bank St",
         "Spadina Ave", "Robson St", "Chemin de la Côte-des-Neiges"),
        ("Apt {n}", "Unit {n}", "Suite {n}00", "App. {n}"),
        (
            _ca("Toronto", "ON", "M5V", "416"), _ca("Ottawa", "ON", "K1P", "613"),
            _ca("Montréal", "QC", "H2X", "514"), _ca("Québec", "QC", "G1R", "418"),
            _ca("Vancouver", "BC", "V6B", "604"), _ca("Victoria", "BC", "V8W", "250"),
            _ca("Calgary", "AB", "T2P", "403"), _ca("Edmonton", "AB", "T5J", "780"),
            _ca("Winnipeg", "MB", "R3C", "204"), _ca("Halifax", "NS", "B3H", "902"),
            _ca("Saskatoon", "SK", "S7K", "306"), _ca("St. John's", "NL", "A1C", "709"),
        ),
    ),
    Country(
        "GB", 6, 0.6, "{n} {street}", 240,
        ("High Street", "Station Road", "Church Lane", "Victoria Road", "Queen's Road",
         "Park Lane", "Mill Lane", "The Crescent", "Albert Street", "Grange Road",
         "Princes Street", "Castle Terrace"),
        ("Flat {n}", "Flat {n}{L}", "Apartment {n}", "Unit {n}"),
        (
            Place("London", "England", "SE1 #@@", "+447700900###"),
            Place("London", "England", "E2 #@@", "+447700900###"),
            Place("Manchester", "England", "M1 #@@", "+447700900###"),
            Place("Birmingham", "England", "B5 #@@", "+447700900###"),
            Place("Leeds", "England", "LS1 #@@", "+447700900###"),
            Place("Bristol", "England", "BS1 #@@", "+447700900###"),
            Place("Brighton", "England", "BN1 #@@", "+447700900###"),
            Place("Newcastle upon Tyne", "England", "NE1 #@@", "+447700900###"),
            Place("Edinburgh", "Scotland", "EH1 #@@", "+447700900###"),
            Place("Glasgow", "Scotland", "G1 #@@", "+447700900###"),
            Place("Cardiff", "Wales", "CF10 #@@", "+447700900###"),
            Place("Belfast", "Northern Ireland", "BT1 #@@", "+447700900###"),
        ),
    ),
    Country(
        "IE", 1, 0.7, "{n} {street}", 120,
        ("Main Street", "Dame Street", "Grafton Street", "Patrick Street", "Shop Street",
         "O'Connell Street", "Bóthar na Trá"),
        ("Apartment {n}", "Flat {n}"),
        (
            Place("Dublin", "Co. Dublin", "D02 @###", "+35385#######"),
            Place("Cork", "Co. Cork", "T12 @###", "+35386#######"),
            Place("Galway", "Co. Galway", "H91 @###", "+35387#######"),
            Place("Limerick", "Co. Limerick", "V94 @###", "+35383#######"),
        ),
    ),
    Country(
        "AU", 3, 0.6, "{n} {street}", 400,
        ("George Street", "Collins Street", "Queen Street", "Hay Street", "Rundle Mall",
         "Elizabeth Street", "Smith Street", "Bourke Street", "Murray Street"),
        ("Unit {n}", "Apartment {n}", "Level {n}"),
        (
            Place("Sydney", "NSW", "20##", "+61491570###"),
            Place("Melbourne", "VIC", "30##", "+61491570###"),
            Place("Brisbane", "QLD", "40##", "+61491570###"),
            Place("Perth", "WA", "60##", "+61491570###"),
            Place("Adelaide", "SA", "50##", "+61491570###"),
            Place("Hobart", "TAS", "70##", "+61491570###"),
            Place("Canberra", "ACT", "26##", "+61491570###"),
            Place("Darwin", "NT", "08##", "+61491570###"),
        ),
    ),
    Country(
        "NZ", 1, 0.7, "{n} {street}", 300,
        ("Queen Street", "Cuba Street", "Colombo Street", "George Street", "Karangahape Road",
         "Lambton Quay", "Ponsonby Road"),
        ("Flat {n}", "Unit {n}{L}"),
        (
            Place("Auckland", "Auckland", "10##", "+6421#######"),
            Place("Wellington", "Wellington", "60##", "+6422#######"),
            Place("Christchurch", "Canterbury", "80##", "+6427#######"),
            Place("Dunedin", "Otago", "90##", "+6421#######"),
            Place("Rotorua", "Bay of Plenty", "30##", "+6427#######"),
            Place("Hamilton", "Waikato", "32##", "+6422#######"),
        ),
    ),
    Country(
        "DE", 4, 0.85, "{street} {n}", 180,
        ("Hauptstraße", "Schillerstraße", "Goethestraße", "Bahnhofstraße", "Lindenallee",
         "Gartenweg", "Am Markt", "Kastanienweg", "Friedrichstraße", "Mühlenweg",
         "Bergstraße", "Rosenstraße"),
        ("Hinterhaus", "{n}. OG", "Wohnung {n}", "c/o Wohngemeinschaft {L}"),
        (
            Place("Berlin", "Berlin", "10###", "+49151########"),
            Place("Hamburg", "Hamburg", "20###", "+49160########"),
            Place("München", "Bayern", "80###", "+49170########"),
            Place("Köln", "Nordrhein-Westfalen", "50###", "+49152########"),
            Place("Frankfurt am Main", "Hessen", "60###", "+49171########"),
            Place("Leipzig", "Sachsen", "04###", "+49176########"),
            Place("Stuttgart", "Baden-Württemberg", "70###", "+49157########"),
            Place("Düsseldorf", "Nordrhein-Westfalen", "40###", "+49162########"),
            Place("Dresden", "Sachsen", "01###", "+49175########"),
            Place("Hannover", "Niedersachsen", "30###", "+49159########"),
        ),
    ),
    Country(
        "FR", 2, 0.85, "{n} {street}", 150,
        ("rue de la République", "rue Victor Hugo", "avenue Jean Jaurès", "boulevard Voltaire",
         "place de la Mairie", "rue des Écoles", "impasse des Lilas", "chemin du Moulin",
         "rue Pasteur", "allée des Tilleuls"),
        ("Appartement {n}", "Bâtiment {L}", "Escalier {L}, {n}e étage"),
        (
            Place("Paris", "Île-de-France", "750##", "+3363998####"),
            Place("Lyon", "Auvergne-Rhône-Alpes", "6900#", "+3363998####"),
            Place("Marseille", "Provence-Alpes-Côte d'Azur", "130##", "+3363998####"),
            Place("Toulouse", "Occitanie", "310##", "+3363998####"),
            Place("Lille", "Hauts-de-France", "590##", "+3363998####"),
            Place("Bordeaux", "Nouvelle-Aquitaine", "330##", "+3363998####"),
            Place("Nantes", "Pays de la Loire", "440##", "+3363998####"),
            Place("Strasbourg", "Grand Est", "670##", "+3363998####"),
        ),
    ),
    Country(
        "ES", 1, 0.85, "{street}, {n}", 200,
        ("Calle Mayor", "Calle de Alcalá", "Avenida de la Constitución", "Calle del Sol",
         "Plaza de España", "Calle San Vicente", "Paseo de Gracia", "Calle Real",
         "Gran Vía", "Calle de Atocha"),
        ("{n}º {L}", "Piso {n}, puerta {L}", "Bajo {L}"),
        (
            Place("Madrid", "Madrid", "280##", "+346########"),
            Place("Barcelona", "Cataluña", "080##", "+346########"),
            Place("Valencia", "Comunidad Valenciana", "460##", "+346########"),
            Place("Sevilla", "Andalucía", "410##", "+346########"),
            Place("Bilbao", "País Vasco", "480##", "+346########"),
            Place("Zaragoza", "Aragón", "500##", "+346########"),
            Place("Málaga", "Andalucía", "290##", "+346########"),
        ),
    ),
    Country(
        "MX", 3, 0.9, "{street} {n}", 3000,
        ("Av. Insurgentes Sur", "Av. Revolución", "Calle Madero", "Av. Juárez",
         "Calle Morelos", "Av. Vallarta", "Calle Hidalgo", "Paseo de la Reforma",
         "Calle 60", "Av. Constitución"),
        ("Depto. {n}", "Int. {n}{L}", "Col. Centro", "Col. Roma Norte"),
        (
            Place("Ciudad de México", "CDMX", "06###", "+5255########"),
            Place("Guadalajara", "Jalisco", "44###", "+5233########"),
            Place("Monterrey", "Nuevo León", "64###", "+5281########"),
            Place("Puebla", "Puebla", "72###", "+52222#######"),
            Place("Mérida", "Yucatán", "97###", "+52999#######"),
            Place("Tijuana", "Baja California", "22###", "+52664#######"),
            Place("Oaxaca de Juárez", "Oaxaca", "68###", "+52951#######"),
        ),
    ),
    Country(
        "BR", 2, 0.9, "{street}, {n}", 3000,
        ("Rua Augusta", "Avenida Paulista", "Rua das Flores", "Rua XV de Novembro",
         "Avenida Atlântica", "Rua da Consolação", "Avenida Sete de Setembro",
         "Rua Oscar Freire", "Rua Direita"),
        ("Apto {n}", "Apto {n}0{n}", "Bloco {L}, apto {n}", "Casa {n}"),
        (
            Place("São Paulo", "SP", "01###-###", "+55119########"),
            Place("Rio de Janeiro", "RJ", "20###-###", "+55219########"),
            Place("Belo Horizonte", "MG", "30###-###", "+55319########"),
            Place("Porto Alegre", "RS", "90###-###", "+55519########"),
            Place("Salvador", "BA", "40###-###", "+55719########"),
            Place("Recife", "PE", "50###-###", "+55819########"),
            Place("Curitiba", "PR", "80###-###", "+55419########"),
            Place("Fortaleza", "CE", "60###-###", "+55859########"),
        ),
    ),
    Country(
        "JP", 3, 0.95, "{a}-{b}-{c} {street}", 30, (),
        ("Room {n}0{n}", "{L}-Heights {n}0{n}", "Sakura Mansion {n}0{n}", "Maison Aoba {n}0{n}"),
        (
            Place("Shibuya-ku", "Tokyo", "150-00##", "+8190########",
                  ("Jingumae", "Ebisu", "Dogenzaka", "Sakuragaoka-cho")),
            Place("Shinjuku-ku", "Tokyo", "160-00##", "+8180########",
                  ("Nishi-Shinjuku", "Kabukicho", "Takadanobaba", "Yotsuya")),
            Place("Chiyoda-ku", "Tokyo", "101-00##", "+8170########",
                  ("Sotokanda", "Kanda-Jimbocho", "Kudanminami")),
            Place("Kita-ku", "Osaka", "530-00##", "+8190########",
                  ("Umeda", "Tenjinbashi", "Nakazakinishi")),
            Place("Naka-ku", "Aichi", "460-00##", "+8180########",
                  ("Sakae", "Osu", "Marunouchi")),
            Place("Nakagyō-ku", "Kyoto", "604-####", "+8190########",
                  ("Karasuma", "Sanjo-dori", "Nishikikoji")),
            Place("Hakata-ku", "Fukuoka", "812-00##", "+8180########",
                  ("Hakataekimae", "Gion-machi", "Nakasu")),
            Place("Chūō-ku", "Hokkaido", "060-00##", "+8170########",
                  ("Kita Sanjo Nishi", "Minami Ichijo Nishi", "Odori Nishi")),
        ),
    ),
    Country(
        "KR", 1, 0.95, "{n} {street}", 400,
        ("Teheran-ro", "World Cup buk-ro", "Haeundaehaebyeon-ro", "Daehak-ro", "Gwanggyo-ro",
         "Sejong-daero", "Hongik-ro"),
        ("Apt {n}0{n}", "Unit {n}0{n}", "{n}F"),
        (
            Place("Gangnam-gu", "Seoul", "06###", "+8210########"),
            Place("Mapo-gu", "Seoul", "04###", "+8210########"),
            Place("Haeundae-gu", "Busan", "48###", "+8210########"),
            Place("Yuseong-gu", "Daejeon", "34###", "+8210########"),
            Place("Suwon", "Gyeonggi-do", "16###", "+8210########"),
        ),
    ),
    Country(
        "PH", 2, 0.9, "{n} {street}", 2000,
        ("Rizal Street", "Mabini Street", "Bonifacio Avenue", "Katipunan Avenue",
         "Ayala Avenue", "Osmeña Boulevard", "Aguinaldo Highway", "Quirino Avenue"),
        ("Unit {n}{L}", "Blk {n} Lot {n}", "{n}F Tower {L}"),
        (
            Place("Quezon City", "Metro Manila", "11##", "+63917#######"),
            Place("Makati", "Metro Manila", "12##", "+63918#######"),
            Place("Cebu City", "Cebu", "60##", "+63927#######"),
            Place("Davao City", "Davao del Sur", "80##", "+63908#######"),
            Place("Pasig", "Metro Manila", "16##", "+63995#######"),
        ),
    ),
    Country(
        "IN", 1, 0.95, "{n}, {street}", 500,
        ("MG Road", "Residency Road", "Linking Road", "Anna Salai", "Park Street",
         "Brigade Road", "FC Road", "Marine Drive"),
        ("Flat {n}0{n}", "{n}nd Floor", "Block {L}"),
        (
            Place("Bengaluru", "Karnataka", "5600##", "+9198########"),
            Place("Mumbai", "Maharashtra", "4000##", "+9198########"),
            Place("Chennai", "Tamil Nadu", "6000##", "+9194########"),
            Place("Hyderabad", "Telangana", "5000##", "+9190########"),
            Place("New Delhi", "Delhi", "1100##", "+9198########"),
            Place("Pune", "Maharashtra", "4110##", "+9197########"),
            Place("Kolkata", "West Bengal", "7000##", "+9198########"),
            Place("Kochi", "Kerala", "6820##", "+9194########"),
        ),
    ),
    Country(
        "NG", 1, 0.95, "{n} {street}", 200,
        ("Allen Avenue", "Awolowo Road", "Adeola Odeku Street", "Herbert Macaulay Way",
         "Ogui Road", "Aba Road", "Ring Road", "Ahmadu Bello Way"),
        ("Flat {n}", "Block {L}, Flat {n}"),
        (
            Place("Lagos", "Lagos", "1002##", "+234803#######"),
            Place("Abuja", "FCT", "9001##", "+234806#######"),
            Place("Ibadan", "Oyo", "2001##", "+234805#######"),
            Place("Enugu", "Enugu", "4001##", "+234703#######"),
            Place("Port Harcourt", "Rivers", "5001##", "+234813#######"),
            Place("Kano", "Kano", "7001##", "+234802#######"),
        ),
    ),
    Country(
        "PL", 1, 0.9, "{street} {n}", 150,
        ("ul. Marszałkowska", "ul. Floriańska", "ul. Długa", "ul. Piotrkowska",
         "ul. Świętojańska", "ul. Mickiewicza", "al. Jerozolimskie"),
        ("m. {n}", "lok. {n}"),
        (
            Place("Warszawa", "mazowieckie", "00-###", "+48501######"),
            Place("Kraków", "małopolskie", "30-###", "+48602######"),
            Place("Wrocław", "dolnośląskie", "50-###", "+48511######"),
            Place("Gdańsk", "pomorskie", "80-###", "+48790######"),
            Place("Poznań", "wielkopolskie", "60-###", "+48661######"),
            Place("Łódź", "łódzkie", "90-###", "+48505######"),
        ),
    ),
    Country(
        "FI", 1, 0.9, "{street} {n}", 90,
        ("Mannerheimintie", "Aleksanterinkatu", "Hämeenkatu", "Yliopistonkatu", "Kauppakatu",
         "Läntinen Rantakatu", "Isokatu"),
        ("A {n}", "B {n}", "as. {n}"),
        (
            Place("Helsinki", "Uusimaa", "001##", "+35840#######"),
            Place("Espoo", "Uusimaa", "021##", "+35850#######"),
            Place("Tampere", "Pirkanmaa", "331##", "+35844#######"),
            Place("Turku", "Varsinais-Suomi", "201##", "+35840#######"),
            Place("Oulu", "Pohjois-Pohjanmaa", "901##", "+35845#######"),
            Place("Jyväskylä", "Keski-Suomi", "401##", "+35850#######"),
        ),
    ),
    Country(
        "SE", 1, 0.85, "{street} {n}", 120,
        ("Drottninggatan", "Storgatan", "Kungsgatan", "Sveavägen", "Östra Hamngatan",
         "Vasagatan", "Södra Förstadsgatan"),
        ("lgh {n}10{n}", "{n} tr"),
        (
            Place("Stockholm", "Stockholms län", "111 ##", "+4670#######"),
            Place("Göteborg", "Västra Götalands län", "411 ##", "+4672#######"),
            Place("Malmö", "Skåne län", "211 ##", "+4673#######"),
            Place("Uppsala", "Uppsala län", "753 ##", "+4676#######"),
        ),
    ),
    Country(
        "GR", 1, 0.9, "{street} {n}", 200,
        ("Ermou", "Stadiou", "Panepistimiou", "Tsimiski", "Egnatia", "Akadimias",
         "Vasilissis Sofias"),
        ("{n}os orofos", "Diamerisma {n}"),
        (
            Place("Athens", "Attica", "105 ##", "+3069########"),
            Place("Thessaloniki", "Central Macedonia", "546 ##", "+3069########"),
            Place("Patras", "Western Greece", "262 ##", "+3069########"),
        ),
    ),
    Country(
        "TR", 1, 0.9, "{street} No:{n}", 300,
        ("İstiklal Caddesi", "Bağdat Caddesi", "Atatürk Bulvarı", "Kıbrıs Şehitleri Caddesi",
         "Cumhuriyet Caddesi", "Alsancak Sokak"),
        ("Daire {n}", "Kat {n} Daire {n}"),
        (
            Place("İstanbul", "İstanbul", "34###", "+90532#######"),
            Place("Ankara", "Ankara", "06###", "+90542#######"),
            Place("İzmir", "İzmir", "35###", "+90505#######"),
        ),
    ),
)

# --- the convention ------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoDepartment:
    name: str
    email_local: str
    publicly_visible: bool
    popularity: int  # how often volunteers name it


DEPARTMENTS: tuple[DemoDepartment, ...] = (
    DemoDepartment("Registration", "registration", True, 14),
    DemoDepartment("Security", "security", True, 12),
    DemoDepartment("Con Suite", "consuite", True, 12),
    DemoDepartment("Art Show", "artshow", True, 8),
    DemoDepartment("Dealers' Den", "dealers", True, 7),
    DemoDepartment("Tech Ops", "techops", True, 9),
    DemoDepartment("Programming", "programming", True, 8),
    DemoDepartment("Gaming", "gaming", True, 9),
    DemoDepartment("Hospitality", "hospitality", True, 6),
    DemoDepartment("Accessibility", "access", True, 5),
    DemoDepartment("First Aid", "firstaid", True, 3),
    DemoDepartment("Logistics", "logistics", True, 7),
    DemoDepartment("Photography", "photo", True, 6),
    DemoDepartment("Social Media", "social", True, 5),
    DemoDepartment("Volunteer Ops", "volunteers", True, 6),
    DemoDepartment("Info Desk", "info", True, 8),
    DemoDepartment("Guest Relations", "guests", False, 2),
    DemoDepartment("Finance", "finance", False, 1),
    DemoDepartment("Board Liaison", "board", False, 1),
)
DEPARTMENT_EMAIL_DOMAIN = "regcon.example"

# States a volunteer marks for one department (api.md 3.1), with how often each combination
# comes up; a hidden department is not offered to applicants, so only staffing records it.
STATE_COMBINATIONS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("interest",), 35),
    (("experience", "interest"), 20),
    (("experience",), 8),
    (("avoid",), 12),
    (("interest", "request"), 6),
    (("interest", "assignment"), 7),
    (("experience", "interest", "assignment"), 5),
    (("request",), 3),
    (("assignment",), 2),
    (("experience", "avoid"), 2),
)
HIDDEN_STATE_COMBINATIONS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("assignment",), 3),
    (("experience", "assignment"), 2),
    (("experience",), 1),
)
# What last year's volunteers ended up with: mostly an assignment.
PAST_STATE_COMBINATIONS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("assignment",), 5),
    (("interest", "assignment"), 4),
    (("experience", "assignment"), 2),
    (("interest",), 2),
    (("avoid",), 1),
)

SHIRT_SIZES = ["XS", "S", "M", "L", "XL", "2XL", "3XL", "4XL"]
SHIRT_SIZE_WEIGHTS = (3, 10, 22, 24, 18, 12, 7, 4)
DIETARY_NEEDS = [
    "Vegetarian", "Vegan", "Halal", "Kosher", "Gluten-free", "Nut allergy", "Lactose-free",
    "Shellfish allergy",
]
SHIFTS = [
    "Thursday setup", "Friday morning", "Friday afternoon", "Friday evening",
    "Saturday morning", "Saturday afternoon", "Saturday evening", "Saturday overnight",
    "Sunday morning", "Sunday afternoon", "Sunday teardown",
]
LANGUAGES = [
    "English", "Spanish", "French", "German", "Japanese", "Mandarin", "Korean", "Tagalog",
    "Vietnamese", "Portuguese", "ASL", "Arabic", "Polish", "Yoruba",
]
PRONOUNS = ("she/her", "he/him", "they/them", "she/they", "he/they", "any pronouns", "xe/xem")
PRONOUN_WEIGHTS = (38, 38, 14, 4, 3, 2, 1)
NOTES = (
    "First convention, very excited!",
    "I use a wheelchair; ground-floor posts please.",
    "Happy to lift boxes all weekend.",
    "Night owl: overnight shifts are fine.",
    "Can't stand for long periods.",
    "I speak ASL.",
    "Bringing my own radio and headset.",
    "Ran the badge line at two other cons.",
    "Need Sunday afternoon off for a panel I'm on.",
    "Allergic to cats (and some fursuits).",
    "I have a car and can do supply runs.",
    "Certified in first aid and CPR.",
    "Prefer working with a friend (username fennec_fox).",
    "Please no early mornings, I'm coming from out of state.",
    "Fluent in Japanese, happy to help guests.",
    "Just tell me where to go!",
)

CONTACT_METHODS: tuple[tuple[str, int], ...] = (
    ("Discord", 40),
    ("E-mail", 25),
    ("Telegram", 15),
    ("Phone", 10),
    ("Signal", 8),
    ("WhatsApp", 5),
    ("Bluesky", 5),
)
# fmt: on
